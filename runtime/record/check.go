package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/llama"
)

// ModelCheck is what CheckModel learned from a model file's header.
type ModelCheck struct {
	File *gguf.File // open; the caller closes it
	MoE  *gguf.MoE
	Spec *devices.ModelSpec
}

// CheckModel validates a model file in pure Go before llama.cpp sees it
// (llama.cpp aborts the process on some malformed inputs): the file exists, is
// a regular file (a named pipe would block the reader, a device is no model
// file), parses as GGUF with every tensor inside the file, its architecture is a MoE
// architecture the bundled llama.cpp supports, it has MoE layers, each with a
// router tensor, and a top-k in 1..experts. Errors are one line.
func CheckModel(path string) (*ModelCheck, error) {
	f, err := openGGUF(path, "model")
	if err != nil {
		return nil, err
	}
	mc, err := checkFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return mc, nil
}

// openGGUF opens the GGUF file at path (what names it in errors) once it is
// a regular file that parses with every tensor inside it.
func openGGUF(path, what string) (*gguf.File, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s %s: no such file", what, path)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", what, err)
	case st.IsDir():
		return nil, fmt.Errorf("%s %s: is a directory, want a GGUF file", what, path)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s %s: is %s, not a regular file; want a GGUF file", what, path, atomicfile.Kind(st.Mode()))
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return f, nil
}

// DraftCost is what one token of the draft model at path reads and does:
// every weight but the token embedding (a row lookup) once, 2 FLOPs each
// (a dense draft; experts a MoE draft skips are charged too). It checks the
// file as openGGUF does.
func DraftCost(path string) (bytes, flops int64, err error) {
	f, err := openGGUF(path, "draft model")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	for _, t := range f.Tensors {
		if t.Name != "token_embd.weight" {
			bytes, flops = bytes+t.Bytes, flops+2*t.Elements()
		}
	}
	return bytes, flops, nil
}

func checkFile(f *gguf.File) (*ModelCheck, error) {
	arch := f.Arch()
	if arch == "" {
		return nil, fmt.Errorf("model %s: no general.architecture in the GGUF header", f.Name)
	}
	if !llama.IsMoEArchitecture(arch) {
		return nil, fmt.Errorf("model %s: architecture %q is not a MoE architecture this llama.cpp supports (supported: %s)",
			f.Name, arch, strings.Join(llama.MoEArchitectures(), ", "))
	}
	moe, err := f.MoE()
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	var errs []error
	if moe.TopK < 1 || moe.TopK > moe.Experts {
		errs = append(errs, fmt.Errorf("%s.expert_used_count %d: want 1..%d experts", arch, moe.TopK, moe.Experts))
	}
	var noRouter []string
	for _, l := range moe.Layers {
		if l.Router == "" {
			noRouter = append(noRouter, fmt.Sprint(l.Block))
		}
	}
	if len(noRouter) > 0 {
		errs = append(errs, fmt.Errorf("blocks %s have expert tensors but no blk.N.ffn_gate_inp.weight router", strings.Join(noRouter, ",")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("model %s: %s", f.Name, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	spec, err := f.ModelSpec()
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return &ModelCheck{File: f, MoE: moe, Spec: spec}, nil
}
