package traces

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// failingSource yields its steps, then fails.
type failingSource struct {
	Source
	err error
}

func (f failingSource) Err() error { return f.err }

// TestWriteFile writes a source to a file and reads it back; a source that
// fails leaves the file that was there and no temporary.
func TestWriteFile(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, depth: 1})
	want := ioTestSteps(rand.New(rand.NewPCG(1, 2)), m, 12, false)
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	if err := WriteFile(path, m, NewSliceSource(want)); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if d := ioDiff(got, want); d != "" {
		t.Fatal(d)
	}
	before, _ := os.ReadFile(path)
	boom := errors.New("boom")
	if err := WriteFile(path, m, failingSource{NewSliceSource(want[:3]), boom}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the source's error", err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("a failed write changed the file")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left in the folder, want 1", len(ents))
	}
}

// TestMaxPosFromFooter: the footer's statistics give the largest position
// the steps hold.
func TestMaxPosFromFooter(t *testing.T) {
	m := tsSpec(3, 8, 2)
	o := DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.Sequences, o.Seed = 37, 5, 3, 2
	meta, steps, err := Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := WriteFile(path, meta, NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := int32(0)
	for i := range steps {
		want = max(want, steps[i].Pos)
	}
	if got, ok := r.MaxPos(); !ok || got != want {
		t.Errorf("MaxPos = %d, %v; want %d", got, ok, want)
	}
}
