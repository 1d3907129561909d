package devices

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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
		if err := profileInvariants(data); err != nil {
			t.Fatal(err)
		}
	})
}

// profileInvariants parses data as a profile; an accepted profile must
// resolve to a sane device and survive a round trip through its own encoding.
func profileInvariants(data []byte) error {
	p, err := ParseProfile(data, "fuzz.yaml")
	if err != nil {
		return nil // rejected with an error: fine
	}
	d, err := p.Device()
	if err != nil {
		return fmt.Errorf("validated profile does not resolve: %v", err)
	}
	if d.RAMBytes <= 0 || d.ReserveBytes < 0 || d.ReserveBytes >= d.RAMBytes ||
		!(d.MemEfficiency > 0 && d.MemEfficiency <= 1) || d.Flash.Lanes < 1 || d.Flash.PageBytes <= 0 ||
		len(d.Flash.SingleLane) == 0 || len(d.Flash.Aggregate) == 0 {
		return fmt.Errorf("accepted an insane device: %+v", d)
	}
	for _, c := range [][]CurvePoint{d.Flash.SingleLane, d.Flash.Aggregate} {
		for i, pt := range c {
			if pt.ReadBytes <= 0 || !(pt.BytesPerSec > 0) || math.IsInf(pt.BytesPerSec, 0) ||
				i > 0 && pt.ReadBytes <= c[i-1].ReadBytes {
				return fmt.Errorf("bad curve %v", c)
			}
		}
	}
	fresh := *p
	fresh.raw = nil
	enc, err := fresh.YAML()
	if err != nil {
		return fmt.Errorf("encode: %v", err)
	}
	if _, err := ParseProfile(enc, "fuzz.yaml"); err != nil {
		return fmt.Errorf("re-encoded profile does not parse: %v\n%s", err, enc)
	}
	return nil
}

var mutateSeed = flag.Uint64("mutate.seed", 1, "seed of TestMutatedProfiles")

// TestMutatedProfiles is a quick deterministic stand-in for the fuzzer that
// runs in every `go test`: it mutates the seed profiles (byte flips, cuts,
// duplications, YAML punctuation) and checks the same invariants as
// FuzzParseProfile. Replay a failure with -mutate.seed.
func TestMutatedProfiles(t *testing.T) {
	var seeds [][]byte
	for _, n := range ProfileNames() {
		data, _ := profileFS.ReadFile("profiles/" + n + ".yaml")
		seeds = append(seeds, data)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		seeds = append(seeds, data)
	}
	r := rand.New(rand.NewPCG(*mutateSeed, 0))
	const punct = "\x00*&:[{-!<|>%'\"\n #"
	for it := range 3000 {
		s := slices.Clone(seeds[r.IntN(len(seeds))])
		for k := r.IntN(4) + 1; k > 0 && len(s) > 0; k-- {
			i := r.IntN(len(s))
			switch r.IntN(4) {
			case 0:
				s[i] = byte(r.IntN(256))
			case 1:
				s = slices.Delete(s, i, i+1)
			case 2:
				j := min(len(s), i+r.IntN(50))
				s = slices.Insert(s, j, s[i:j]...)
			case 3:
				c := r.IntN(len(punct))
				s = slices.Insert(s, i, punct[c])
			}
		}
		if err := profileInvariants(s); err != nil {
			t.Fatalf("seed %d, iteration %d: %v\ninput:\n%s", *mutateSeed, it, err, s)
		}
	}
}
