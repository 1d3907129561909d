package sim

import (
	"math"
	"testing"
)

// TestHeatDerating isolates flash derating under sustained reads: off, a read
// takes what it did; on, its transfer runs at the derated rate, computed by
// hand from the bytes read when the transfer began.
func TestHeatDerating(t *testing.T) {
	finish := func(floor float64, tau int64) []Time {
		fd := testFlash(1)
		fd.ThermalFloor, fd.ThermalBytes = floor, tau
		f := newFlash(fd)
		var fins []Time
		f.done = func(id int32, r *flashReq) { fins = append(fins, r.finish) }
		f.submit(0, 1_000_000, true)
		drain(f)
		f.submit(1, 1_000_000, true)
		drain(f)
		return fins
	}
	off := finish(0, 0)
	if off[0] != 1_100_000 || off[1] != 2_200_000 {
		t.Fatalf("no derating: finishes %v, want 1.1 ms and 2.2 ms", off)
	}
	// Floor 0.5, 1 MB scale: the first read starts its transfer with 1 MB
	// submitted (factor 0.5 + 0.5·e^-1), the second with 2 MB (0.5 + 0.5·e^-2).
	on := finish(0.5, 1_000_000)
	want0 := Time(100_000) + Time(math.Ceil(1e6/(1*(0.5+0.5*math.Exp(-1)))))
	want1 := want0 + 100_000 + Time(math.Ceil(1e6/(1*(0.5+0.5*math.Exp(-2)))))
	if on[0] != want0 || on[1] != want1 {
		t.Fatalf("derated: finishes %v, want [%d %d]", on, want0, want1)
	}
}
