package devices

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/internal/textin"
)

// sparseFile is a 1 GB file of zeros that takes no disk (truncate).
func sparseFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<30); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProfileFileBounded: /dev/zero or a 1 GB file given as a profile is
// refused as too large, having read at most MaxProfileBytes+1 bytes (memory
// by construction: textin.ReadFile never holds more).
func TestProfileFileBounded(t *testing.T) {
	for _, p := range []string{"/dev/zero", sparseFile(t)} {
		_, err := ParseProfileFile(p)
		if tl := (*textin.TooLargeError)(nil); !errors.As(err, &tl) || tl.Limit != MaxProfileBytes {
			t.Errorf("%s: got %v, want a *textin.TooLargeError", p, err)
		}
	}
}

// TestBuiltinNameClash: a profile file that keeps a built-in profile's
// name (stated, or its file's base name) with other values is refused
// (ErrBuiltinName); an unedited copy is the built-in and is accepted, and
// the edited one under a name of its own is read.
func TestBuiltinNameClash(t *testing.T) {
	data, err := profileFS.ReadFile("profiles/iphone-17-pro-max.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := ParseProfileFile(write("copy.yaml", data)); err != nil {
		t.Errorf("an unedited copy: %v", err)
	}
	edited := bytes.Replace(data, []byte("value: 12 GiB"), []byte("value: 16 GiB"), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("fixture: no ram value to edit")
	}
	unnamed := bytes.Replace(edited, []byte("name: iphone-17-pro-max\n"), nil, 1)
	for _, p := range []string{write("edited.yaml", edited), write("iphone-17-pro-max.yaml", unnamed)} {
		if _, err := ParseProfileFile(p); !errors.Is(err, ErrBuiltinName) {
			t.Errorf("%s: got %v, want ErrBuiltinName", p, err)
		}
	}
	renamed := bytes.Replace(edited, []byte("name: iphone-17-pro-max\n"), []byte("name: my-phone\n"), 1)
	if p, err := ParseProfileFile(write("mine.yaml", renamed)); err != nil || p.Name != "my-phone" {
		t.Errorf("renamed: %v, %v", p, err)
	}
}
