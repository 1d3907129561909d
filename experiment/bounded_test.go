package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/textin"
)

// TestReadSpecFileBounded: /dev/zero, a 1 GB file or an endless stdin given
// as a spec is refused as too large, having read at most MaxSpecBytes+1
// bytes (memory by construction: textin.ReadFile never holds more).
func TestReadSpecFileBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<30); err != nil {
		t.Fatal(err)
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	for _, p := range []string{"/dev/zero", big, "-"} {
		_, err := ReadSpecFile(p, zero)
		if tl := (*textin.TooLargeError)(nil); !errors.As(err, &tl) || tl.Limit != MaxSpecBytes {
			t.Errorf("%s: got %v, want a *textin.TooLargeError", p, err)
		}
	}
}

// TestParseBOM: a spec saved with a UTF-8 byte-order mark (as some Windows
// editors do) parses as the same spec without it.
func TestParseBOM(t *testing.T) {
	const js = `{"policy": {"name": "lru"}, "cache": {"size": "1GiB"}}`
	want, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse([]byte("\ufeff" + js))
	if err != nil {
		t.Fatalf("with a BOM: %v", err)
	}
	if got.Hash() != want.Hash() || !strings.Contains(string(must(got.Canonical())), "lru") {
		t.Errorf("with a BOM: %+v, want %+v", got, want)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
