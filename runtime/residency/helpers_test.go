//go:build linux

package residency

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lessim/lessim/runtime/gguf"
)

// diskDir is a test folder on a real disk: tmpfs (often /tmp) keeps file pages
// in memory whatever posix_fadvise says.
func diskDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lessim-residency-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// smallOptions is a 4-layer, 16-expert qwen3moe in Q8_0 whose expert slices
// (256×128 weights, 34,816 bytes, 8.5 pages) are not page-aligned.
func smallOptions(arch string) gguf.SynthOptions {
	o := gguf.SynthOptions{Arch: arch, Layers: 4, Experts: 16, TopK: 4, Hidden: 256, ExpertFFN: 128,
		Heads: 4, HeadsKV: 4, HeadDim: 64, Context: 256, Quant: "q8_0", RouterCorrelation: 0.7, Seed: 3}
	o.EnsureDefaults()
	return o
}

// synthModel writes a synthetic model into dir and returns its path and layout.
func synthModel(t testing.TB, dir string, o gguf.SynthOptions) (string, *Layout) {
	t.Helper()
	path := filepath.Join(dir, o.Arch+".gguf")
	if err := gguf.SynthMoE(path, o); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := NewLayout(f)
	if err != nil {
		t.Fatal(err)
	}
	return path, l
}

// mapFile maps the whole file read-only and shared, as llama.cpp does, and
// touches every page so that all of it starts resident.
func mapFile(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(data) })
	var sum byte
	for i := 0; i < len(data); i += 4096 {
		sum += data[i]
	}
	_ = sum
	return data
}
