package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestCheckSpace: a write larger than the free space of its target's folder
// (a symlink resolved) is refused with a *SpaceError; one that fits, or
// whose free space cannot be told, is not, and then the estimate is not
// even made.
func TestCheckSpace(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	mustWrite(t, filepath.Join(other, "real"), []byte("old"), 0o644)
	if err := os.Symlink(filepath.Join(other, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	var asked []string
	free := func(d string) (int64, bool, error) {
		asked = append(asked, d)
		return 1000, true, nil
	}
	need := func(n int64) func() (int64, error) { return func() (int64, error) { return n, nil } }

	err := CheckSpace(filepath.Join(dir, "link"), need(1001), free)
	var se *SpaceError
	if !errors.As(err, &se) || se.Dir != other || se.Need != 1001 || se.Free != 1000 || se.Path != filepath.Join(dir, "link") {
		t.Fatalf("too large: %#v (%v)", se, err)
	}
	if err := CheckSpace(filepath.Join(dir, "f"), need(1000), free); err != nil {
		t.Errorf("exactly the free space: %v", err)
	}
	if len(asked) != 2 || asked[1] != dir {
		t.Errorf("asked about %q, want [%s %s]", asked, other, dir)
	}
	called := false
	unknown := func(string) (int64, bool, error) { return 0, false, nil }
	failing := func(string) (int64, bool, error) { return 0, false, errors.New("no statfs") }
	for _, f := range []FreeFunc{unknown, failing} {
		if err := CheckSpace(filepath.Join(dir, "f"), func() (int64, error) { called = true; return 1 << 62, nil }, f); err != nil || called {
			t.Errorf("free space unknown: err %v, estimate made %v", err, called)
		}
	}
	boom := errors.New("estimate failed")
	if err := CheckSpace(filepath.Join(dir, "f"), func() (int64, error) { return 0, boom }, free); !errors.Is(err, boom) {
		t.Errorf("failed estimate: %v", err)
	}
}

// TestFreeSpace: on Linux and macOS the free space of a real folder is
// known and positive; a missing folder is an error. Elsewhere it is unknown.
func TestFreeSpace(t *testing.T) {
	n, ok, err := FreeSpace(t.TempDir())
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		if ok || err != nil {
			t.Errorf("FreeSpace on %s: %d, %v, %v; want unknown", runtime.GOOS, n, ok, err)
		}
		return
	}
	if !ok || err != nil || n <= 0 {
		t.Errorf("FreeSpace: %d, %v, %v", n, ok, err)
	}
	if _, ok, err := FreeSpace(filepath.Join(t.TempDir(), "missing")); ok || err == nil {
		t.Errorf("missing folder: ok %v, err %v", ok, err)
	}
}
