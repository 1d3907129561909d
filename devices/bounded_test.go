package devices

import (
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
