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
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("model %s: no such file", path)
	case err != nil:
		return nil, fmt.Errorf("model: %w", err)
	case st.IsDir():
		return nil, fmt.Errorf("model %s: is a directory, want a GGUF file", path)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("model %s: is %s, not a regular file; want a GGUF file", path, atomicfile.Kind(st.Mode()))
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	mc, err := checkFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return mc, nil
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
