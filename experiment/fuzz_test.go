package experiment

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSpec: Parse never panics; a spec that parses and validates has only
// finite numbers, a hash, and survives encoding and parsing unchanged.
func FuzzSpec(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"trace":{"path":"t.parquet"},"predictor":{"recall":0.7},"policy":{"name":"les","les":{"threshold":0.9}}}`))
	f.Add([]byte(`{"speculative":{"block":4,"accept":0.7},"policy":{"name":"pinned-hot","pinned_hot":{"pin_fraction":0.3}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if s.Validate() != nil {
			return
		}
		for _, l := range floats(&s) {
			if v := l.v.Float(); math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s = %v passed Validate", l.path, v)
			}
		}
		h := s.Hash()
		if h == "invalid" {
			t.Fatal("a valid spec has no hash")
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(b)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		if back.Hash() != h {
			t.Fatalf("hash changed over a round trip: %s", b)
		}
	})
}
