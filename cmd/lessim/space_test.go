package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeFree makes the output folders' file systems report free bytes (ok
// false: free space unknown) for the rest of the test.
func fakeFree(t *testing.T, free int64, ok bool) {
	t.Helper()
	old := freeSpace
	freeSpace = func(string) (int64, bool, error) { return free, ok, nil }
	t.Cleanup(func() { freeSpace = old })
}

// TestOutputSpace: with 1 MiB free, a trace synth or model synth too large for
// it is refused before anything is written, with the estimate, the free space
// and what to change (a trace import too); an older file at --out stays as
// it was, and no temporary is left. A trace that fits is written; free space that cannot be
// told refuses nothing.
func TestOutputSpace(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "..", "traces", "testdata", "bmoe-small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fakeFree(t, 1<<20, true)
	runCLI(t, dir, "trace", "synth", "--tokens", "20", "--quiet", "--out", "t.parquet")
	old := readFile(t, filepath.Join(dir, "t.parquet"))
	got := runCLI(t, dir, "trace", "synth", "--tokens", "100000000", "--quiet", "--out", "t.parquet")
	for _, want := range []string{
		"lessim: --out t.parquet: the trace needs about 2.",
		" TiB (100000000 tokens × 26.",
		" KiB, measured on the first 256, plus 5%), more than the 1.00 MiB free in " + dir + ": write fewer tokens or sequences (--tokens, --prompt-tokens, --sequences), the lookahead compactly (--lookahead-top 8) or to another folder\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("trace synth: got %q, want it to contain %q", got, want)
		}
	}
	got = runCLI(t, dir, "trace", "synth", "--tokens", "1000", "--lookahead-top", "8", "--logits", "--quiet", "--out", "t.parquet")
	if !strings.Contains(got, "more than the 1.00 MiB free") || !strings.Contains(got, "(without --logits) or to another folder") || strings.Contains(got, "compactly") {
		t.Errorf("trace synth --lookahead-top 8 --logits: got %q", got)
	}
	got = runCLI(t, dir, "model", "synth", "--quant", "f16", "--quiet", "--out", "m.gguf")
	if !strings.HasPrefix(got, "lessim: --out m.gguf: the model needs 3.") || !strings.HasSuffix(got, " GiB, more than the 1.00 MiB free in "+dir+": make it smaller (--layers, --experts, --expert-ffn, --hidden, --vocab), use --quant q8_0 or write to another folder\n") {
		t.Errorf("model synth: got %q", got)
	}
	sameFile(t, filepath.Join(dir, "t.parquet"), old)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the folder, want only t.parquet: %v", len(ents), ents)
	}

	fakeFree(t, 100, true)
	if got := runCLI(t, dir, "trace", "import", src, "--quiet", "--out", "i.parquet"); !strings.HasPrefix(got, "lessim: --out i.parquet: the trace needs about ") || !strings.HasSuffix(got, " free in "+dir+": write it to another folder\n") {
		t.Errorf("trace import: got %q", got)
	}

	fakeFree(t, 0, false)
	if got := runCLI(t, dir, "trace", "synth", "--tokens", "30", "--quiet", "--out", "u.parquet"); !strings.HasPrefix(got, "wrote u.parquet: 30 tokens") {
		t.Errorf("free space unknown: got %q", got)
	}
}
