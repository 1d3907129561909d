//go:build linux

package calibrate

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/runtime/gguf"
)

// smallModel writes a small synthetic model into dir (about 7 MB).
func smallModel(t testing.TB, dir string) string {
	t.Helper()
	o := gguf.SynthOptions{Arch: "qwen3moe", Layers: 4, Experts: 16, TopK: 4, Hidden: 256, ExpertFFN: 128,
		Heads: 4, HeadsKV: 2, HeadDim: 64, Context: 1024, Quant: "q8_0", RouterCorrelation: 0.7, Seed: 5}
	o.EnsureDefaults()
	path := filepath.Join(dir, "small.gguf")
	if err := gguf.SynthMoE(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

// diskDir is a folder on a real disk (not tmpfs).
func diskDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lessim-calibrate-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// quick are options for a short calibration.
func quick(model, out string) Options {
	return Options{Model: model, Out: out, Lanes: []int{1, 2}, Sizes: []int64{64 << 10, 256 << 10},
		Samples: 3, Reads: 4, Tokens: 4, MemBytes: 16 << 20, Host: "testhost"}
}

func names(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestTmpfsRefusesDirectIO: a model on tmpfs is a clear error before anything
// is measured, and nothing is written. (tmpfs refuses O_DIRECT before Linux 6.6
// and accepts it since, reading from RAM: either way it is refused.)
func TestTmpfsRefusesDirectIO(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "lessim-calibrate-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.RemoveAll(shm)
	model := smallModel(t, shm)
	outDir := diskDir(t)
	_, err = Run(context.Background(), quick(model, filepath.Join(outDir, "host.yaml")))
	if !errors.Is(err, ErrNoDirectIO) && !errors.Is(err, ErrNotStorage) || !strings.Contains(err.Error(), "tmpfs") {
		t.Fatalf("model on tmpfs: err = %v, want one saying the file system refuses O_DIRECT or has no storage under it", err)
	}
	if got := names(t, outDir); len(got) != 0 {
		t.Errorf("left in the output folder: %v", got)
	}
	if got := names(t, shm); len(got) != 1 {
		t.Errorf("left beside the model: %v", got)
	}
	// Same with the output on tmpfs too.
	_, err = Run(context.Background(), quick(model, filepath.Join(shm, "host.yaml")))
	if !errors.Is(err, ErrNoDirectIO) && !errors.Is(err, ErrNotStorage) {
		t.Fatalf("err = %v", err)
	}
	if got := names(t, shm); len(got) != 1 {
		t.Errorf("left beside the model: %v", got)
	}
}

func TestBadOptions(t *testing.T) {
	o := Options{Model: "m.gguf", Out: "/nonexistent/dir/host.yaml", Lanes: []int{2, 1}, Sizes: []int64{1000}, Samples: -1, Tokens: 1}
	o.EnsureDefaults()
	err := o.Validate()
	for _, want := range []string{"model m.gguf: no such file", "does not exist", "lanes must increase", "multiple of 4 KiB", "--samples -1: want at least 1", "--tokens 1: want at least 2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %q", err, want)
		}
	}
	if _, err := Run(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "--model is required") {
		t.Errorf("Run without a model: %v", err)
	}
	dir := diskDir(t)
	missing := filepath.Join(dir, "missing.gguf")
	if _, err := Run(context.Background(), quick(missing, filepath.Join(dir, "h.yaml"))); err == nil || err.Error() != "model "+missing+": no such file" {
		t.Errorf("Run on a missing model: %v", err)
	}
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), quick(model, model)); err == nil || !strings.Contains(err.Error(), "is the input") {
		t.Errorf("Run with --out the model: %v", err)
	}
	if b, _ := os.ReadFile(model); len(b) != 1<<20 {
		t.Errorf("Run with --out the model replaced it (%d bytes left)", len(b))
	}
}

// TestModelCheckedFirst: a model that is not a GGUF Mixture-of-Experts file
// (text, a large file of zeros, a directory) is refused by Run before any
// measurement, naming the file and why, and nothing is written. Before, a
// text file failed at the first O_DIRECT read ("EOF") and a large file was
// measured for a while before llama.cpp refused it.
func TestModelCheckedFirst(t *testing.T) {
	dir := diskDir(t)
	notes := filepath.Join(dir, "notes.txt")
	zeros := filepath.Join(dir, "zeros.gguf")
	if err := os.WriteFile(notes, []byte("shopping: eggs, flour\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zeros, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "models")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "host.yaml")
	for model, want := range map[string]string{
		notes: "model: " + notes + ": not a GGUF file (magic \"shop\")",
		zeros: "model: " + zeros + ": not a GGUF file (magic \"\\x00\\x00\\x00\\x00\")",
		sub:   "model " + sub + ": is a directory, want a GGUF file",
	} {
		var log strings.Builder
		o := quick(model, out)
		o.Log = &log
		if _, err := Run(context.Background(), o); err == nil || err.Error() != want {
			t.Errorf("Run(--model %s) = %v, want %q", filepath.Base(model), err, want)
		}
		if log.Len() > 0 {
			t.Errorf("Run(--model %s) measured before refusing it:\n%s", filepath.Base(model), log.String())
		}
	}
	if got := names(t, dir); len(got) != 3 {
		t.Errorf("files in the folder: %v, want only the three inputs", got)
	}
}

// TestMeasurements runs each measurement on a real file with few samples and
// checks what can be checked without a clock bound: counts, signs, relations.
func TestMeasurements(t *testing.T) {
	dir := diskDir(t)
	model := smallModel(t, dir)
	f, n, err := openDirect(model)
	if err != nil {
		t.Skipf("%v", err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	p, err := measureFlash(f, n, 256<<10, 2, 4, 3, rng)
	if err != nil {
		t.Fatal(err)
	}
	if p.Throughput.N != 3 || p.PerRead.N != 24 || p.Throughput.Median <= 0 || p.PerRead.Q1 > p.PerRead.Median || p.PerRead.Median > p.PerRead.Q3 {
		t.Errorf("flash point %+v: want 3 throughput samples, 24 read times, ordered quartiles", p)
	}
	if _, err := measureFlash(f, n, n+4096, 1, 1, 1, rng); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("read larger than the file: %v", err)
	}
	ra, err := readAhead(model)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Bytes < 0 || !strings.HasSuffix(ra.File, "queue/read_ahead_kb") {
		t.Errorf("read-ahead %+v", ra)
	}
	mi, err := readMemInfo()
	if err != nil || mi.Available > mi.Total {
		t.Errorf("meminfo %+v, %v", mi, err)
	}
	if bw, peak := memBandwidth(8<<20, 2); bw.N != 2 || bw.Median <= 0 || peak < bw.Median {
		t.Errorf("bandwidth %+v, best %v", bw, peak)
	}
	fc, perFault, err := faultCost(model, 2)
	if err != nil {
		t.Fatal(err)
	}
	if fc.N != 2 || fc.Median <= 0 || perFault < 1 {
		t.Errorf("fault cost %+v, %.1f pages per fault", fc, perFault)
	}
	lc, err := loadCPU(model, []int64{64 << 10, 1 << 20}, 3, rng.Int64N)
	if err != nil {
		t.Fatal(err)
	}
	if lc.N != 6 {
		t.Errorf("load CPU %+v: want 6 samples", lc)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 4, 2, 3})
	if s.N != 5 || s.Median != 3 || s.Q1 != 2 || s.Q3 != 4 || s.IQR() != 2 {
		t.Errorf("Summarize = %+v", s)
	}
	if got := s.describe(func(v float64) string { return plain(v) + " x" }); got != "5 samples, median 3 x, IQR 2 x" {
		t.Errorf("describe = %q", got)
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := diskDir(t)
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("content %q", b)
	}
	if err := writeAtomic(filepath.Join(dir, "missing", "p.yaml"), []byte("x")); err == nil {
		t.Error("write into a missing folder: no error")
	}
	if got := names(t, dir); len(got) != 1 {
		t.Errorf("folder holds %v, want only p.yaml", got)
	}
}
