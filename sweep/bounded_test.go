package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/internal/textin"
)

// TestReadGridBounded: /dev/zero or a 1 GB file given as a sweep file (or
// as a results folder's manifest) is refused as too large, having read at
// most its limit (memory by construction: textin.ReadFile never holds more).
func TestReadGridBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, ManifestFile)
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<30); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", big} {
		_, err := ReadGrid(p)
		if tl := (*textin.TooLargeError)(nil); !errors.As(err, &tl) || tl.Limit != MaxGridBytes {
			t.Errorf("%s: got %v, want a *textin.TooLargeError", p, err)
		}
	}
	if _, err := ReadManifest(dir); !errors.As(err, new(*textin.TooLargeError)) {
		t.Errorf("a 1 GB manifest: got %v, want a *textin.TooLargeError", err)
	}
}
