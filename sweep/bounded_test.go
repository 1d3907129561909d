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

// TestOneCacheSizeOnePoint: one cache size written as 3GiB, 3072MiB or
// cache.bytes 3221225472 is one point, with one id, whichever way it came.
func TestOneCacheSizeOnePoint(t *testing.T) {
	const grid = `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 24}}
  device: {name: iphone-17-pro-max}
axes:
  policy.name: [lru]
`
	_, pts := mustExpand(t, grid+"  cache.size: [3GiB, 3072MiB, 3221225472 B, 1GiB]\n")
	if len(pts) != 2 || pts[0].Spec.Cache.Size != "3GiB" {
		t.Fatalf("got %d points (%+v), want 2, the first of 3GiB", len(pts), pts)
	}
	_, byBytes := mustExpand(t, grid+"  cache.bytes: [3221225472]\n")
	if len(byBytes) != 1 || byBytes[0].ID != pts[0].ID {
		t.Errorf("cache.bytes 3221225472: point %+v, want the id of 3GiB, %s", byBytes, pts[0].ID)
	}
}
