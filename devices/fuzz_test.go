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
	for _, data := range extremeSeeds() {
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
	if err := deviceInBounds(d); err != nil {
		return err
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

// deviceInBounds checks that every number of an accepted device lies within
// its bound, every derived curve rate is finite, positive and within the
// transfer-rate bound, and flash reads take a positive time below 2^53 ns.
func deviceInBounds(d *Device) error {
	for field, v := range map[string]float64{
		"memory.ram": float64(d.RAMBytes), "memory.reserve": float64(d.ReserveBytes),
		"memory.bandwidth": d.MemBandwidth, "memory.efficiency": d.MemEfficiency,
		"compute.flops": d.ComputeFLOPS, "compute.layer_overhead": float64(d.LayerOverhead),
		"flash.lanes": float64(d.Flash.Lanes), "flash.latency": float64(d.Flash.LatencyNS),
		"flash.page_size": float64(d.Flash.PageBytes), "flash.read_ahead": float64(d.Flash.ReadAheadBytes),
		"flash.fault_cost": float64(d.Flash.FaultNS),
	} {
		if !bound(field).Contains(v) {
			return fmt.Errorf("accepted %s = %v, outside %s", field, v, bound(field).RangeText())
		}
	}
	rates := bound(transferRateField)
	for _, c := range [][]CurvePoint{d.Flash.SingleLane, d.Flash.Aggregate} {
		for i, pt := range c {
			if !bound("flash.*[].read").Contains(float64(pt.ReadBytes)) || !rates.Contains(pt.BytesPerSec) ||
				math.IsInf(pt.BytesPerSec, 0) || !(pt.BytesPerSec > 0) || i > 0 && pt.ReadBytes <= c[i-1].ReadBytes {
				return fmt.Errorf("bad curve %v", c)
			}
		}
	}
	_, maxExpert := bound("model.layers[].expert_bytes").Range()
	for _, read := range []int64{512, 1 << 20, int64(maxExpert)} {
		for _, k := range []int{1, d.Flash.Lanes} {
			if ns := d.Flash.ReadNS(read, k); ns <= 0 || ns >= 1<<53 {
				return fmt.Errorf("ReadNS(%d, %d) = %d", read, k, ns)
			}
		}
	}
	return nil
}

// extremeSeeds are profiles with NaN, infinities, huge and tiny numbers and
// values at the ends of their bounds, for the fuzzer and TestMutatedProfiles.
func extremeSeeds() [][]byte {
	out := [][]byte{boundsProfile(nil)}
	for _, over := range []map[string]string{
		{"memory.bandwidth": ".nan"}, {"memory.efficiency": ".inf"}, {"compute.flops": "-.inf"},
		{"flash.latency": "NaN ns"}, {"single.bandwidth": "Inf B/s"}, {"agg.read": "1e999 B"},
		{"memory.ram": "1e300 TiB"}, {"memory.bandwidth": "75.8 B/s"}, {"compute.flops": "1e-6 FLOPS"},
		{"agg.bandwidth": "1e-3 B/s"}, {"flash.lanes": "1e9"}, {"flash.page_size": "12 KiB"},
		{"memory.bandwidth": "1 GB/s", "memory.efficiency": "0.01", "compute.flops": "1 GFLOPS", "flash.lanes": "1024",
			"flash.latency": "100 ms", "single.read": "1 GiB", "single.bandwidth": "1 MB/s", "agg.lanes": "1024", "agg.bandwidth": "1 MB/s"},
		{"memory.ram": "16 TiB", "memory.bandwidth": "10 TB/s", "compute.flops": "10000 TFLOPS", "flash.latency": "1 us",
			"single.read": "512 B", "agg.read": "512 B", "agg.bandwidth": "1 GB/s", "flash.page_size": "2 MiB", "flash.read_ahead": "64 MiB"},
	} {
		out = append(out, boundsProfile(over))
	}
	return out
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
	seeds = append(seeds, extremeSeeds()...)
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
