package devices

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseProfile feeds arbitrary bytes to ParseProfile, seeded from the
// embedded profiles and every testdata profile. It must never panic; a profile
// it accepts must resolve to a device with sane numbers and survive a round
// trip through its own YAML encoding.
func FuzzParseProfile(f *testing.F) {
	for _, n := range ProfileNames() {
		data, err := profileFS.ReadFile("profiles/" + n + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data, "fuzz.yaml")
		if err != nil {
			return
		}
		d, err := p.Device()
		if err != nil {
			t.Fatalf("validated profile does not resolve: %v", err)
		}
		if d.RAMBytes <= 0 || d.ReserveBytes < 0 || d.ReserveBytes >= d.RAMBytes ||
			!(d.MemEfficiency > 0 && d.MemEfficiency <= 1) || d.Flash.Lanes < 1 ||
			len(d.Flash.SingleLane) == 0 || len(d.Flash.Aggregate) == 0 {
			t.Fatalf("accepted an insane device: %+v", d)
		}
		for _, c := range [][]CurvePoint{d.Flash.SingleLane, d.Flash.Aggregate} {
			for i, pt := range c {
				if pt.ReadBytes <= 0 || !(pt.BytesPerSec > 0) || math.IsInf(pt.BytesPerSec, 0) ||
					i > 0 && pt.ReadBytes <= c[i-1].ReadBytes {
					t.Fatalf("bad curve %v", c)
				}
			}
		}
		fresh := *p
		fresh.raw = nil
		enc, err := fresh.YAML()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		if _, err := ParseProfile(enc, "fuzz.yaml"); err != nil {
			t.Fatalf("re-encoded profile does not parse: %v\n%s", err, enc)
		}
	})
}
