package traces

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
)

// atomicOld puts an existing file at path and returns its bytes.
func atomicOld(t *testing.T, path string) []byte {
	t.Helper()
	old := bytes.Repeat([]byte("an older trace "), 20_000)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	return old
}

func atomicSame(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s changed: %d bytes, want the old %d", path, len(got), len(want))
	}
}

// TestCreateLeavesOldUntilClose: while a trace is written, and after Abort,
// the file at the path is the old one; Close replaces it.
func TestCreateLeavesOldUntilClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	old := atomicOld(t, path)
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, depth: 1})
	steps := ioTestSteps(rand.New(rand.NewPCG(9, 9)), m, 40, false)

	w, err := Create(path, m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		if err := w.Write(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	atomicSame(t, path, old)
	w.Abort()
	if err := w.Close(); err == nil {
		t.Error("Close after Abort succeeded")
	}
	atomicSame(t, path, old)
	atomictest.NoTemporaries(t, dir)

	w, err = Create(path, m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		if err := w.Write(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Abort() // after Close: no effect
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if d := ioDiff(got, steps); d != "" {
		t.Fatal(d)
	}
	atomictest.NoTemporaries(t, dir)
}

// TestCreateFullDisk writes a trace too large for a 1 MiB tmpfs over an
// existing trace: the error is "no space left", the old file is intact and
// no temporary remains (root only; skipped otherwise).
func TestCreateFullDisk(t *testing.T) {
	dir := atomictest.SmallFS(t, "1m")
	path := filepath.Join(dir, "t.parquet")
	old := bytes.Repeat([]byte("old"), 100_000)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	m := ioTestMeta(ioShape{layers: 4, experts: 64, topK: 8, hidden: 256, depth: 2, logits: true, routerInputs: true})
	steps := ioTestSteps(rand.New(rand.NewPCG(3, 3)), m, 400, false)
	w, err := Create(path, m)
	if err != nil {
		t.Fatal(err)
	}
	w.groupSz = 40
	for i := range steps {
		if err = w.Write(&steps[i]); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Close()
	} else {
		w.Close()
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error %v, want no space left on device", err)
	}
	atomicSame(t, path, old)
	atomictest.NoTemporaries(t, dir)
}
