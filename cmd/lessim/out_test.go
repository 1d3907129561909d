package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOutReplacesExistingFile: every command writing an --out file treats
// an existing regular file the same way: it replaces it (atomically), and
// refuses an --out that is a folder or one of its inputs.
func TestOutReplacesExistingFile(t *testing.T) {
	dir := t.TempDir()
	old := []byte("an older file\n")
	for _, c := range []struct {
		out  string
		args []string
	}{
		{"t.parquet", []string{"trace", "synth", "--tokens", "8", "--out", "t.parquet"}},
		{"m.gguf", []string{"model", "synth", "--layers", "1", "--experts", "4", "--top-k", "2", "--hidden", "64", "--quiet", "--out", "m.gguf"}},
		{filepath.Join("ab", "ablation.parquet"), []string{"ablate", "--tokens", "8", "--out", "ab"}},
	} {
		p := filepath.Join(dir, c.out)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, old, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := runCLIErr(t, dir, c.args...); err != nil {
			t.Errorf("%v over an existing file: %v\n%s", c.args, err, stderr)
			continue
		}
		if got, err := os.ReadFile(p); err != nil || string(got) == string(old) {
			t.Errorf("%v: %s not replaced (%v)", c.args, c.out, err)
		}
	}
	if _, _, err := runCLIErr(t, dir, "trace", "synth", "--tokens", "8", "--out", "ab"); err == nil {
		t.Error("trace synth --out a folder: no error")
	}
}
