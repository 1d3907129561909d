package sim

import (
	"math"
	"testing"

	"github.com/lessim/lessim/devices"
)

// testFlash has a flat curve: 1 GB/s single lane, 2 GB/s aggregate, 100 µs latency.
func testFlash(lanes int) devices.Flash {
	return devices.Flash{
		Lanes:      lanes,
		LatencyNS:  100_000,
		SingleLane: []devices.CurvePoint{{ReadBytes: 4096, BytesPerSec: 1e9}},
		Aggregate:  []devices.CurvePoint{{ReadBytes: 4096, BytesPerSec: 2e9}},
	}
}

func drain(f *flash) {
	for {
		ev, id := f.nextEvent()
		if id < 0 {
			return
		}
		f.step(ev, id)
	}
}

func TestSingleReadTime(t *testing.T) {
	f := newFlash(testFlash(4))
	var fin Time
	f.done = func(id int32, r *flashReq) { fin = r.finish }
	f.submit(0, 1_000_000, true) // 1 MB at 1 GB/s = 1 ms
	drain(f)
	if want := Time(100_000 + 1_000_000); fin != want {
		t.Fatalf("finish = %d ns, want %d", fin, want)
	}
}

func TestEqualTimesFireInSubmissionOrder(t *testing.T) {
	f := newFlash(testFlash(4))
	var order []Key
	var times []Time
	f.done = func(id int32, r *flashReq) { order = append(order, r.key); times = append(times, r.finish) }
	for k := Key(3); k >= 0; k-- { // submit 3,2,1,0: identical reads
		f.submit(k, 500_000, false)
	}
	drain(f)
	if len(order) != 4 || times[0] != times[3] {
		t.Fatalf("expected 4 reads finishing together, got %v at %v", order, times)
	}
	for i, k := range []Key{3, 2, 1, 0} {
		if order[i] != k {
			t.Fatalf("completion order %v, want submission order [3 2 1 0]", order)
		}
	}
}

// Past the knee (aggregate = 2 × single), more lanes add latency, not bandwidth.
func TestSaturation(t *testing.T) {
	const n, size = 64, 1 << 20
	var lat [3]float64
	var span [3]Time
	for i, lanes := range []int{1, 2, 8} {
		f := newFlash(testFlash(lanes))
		var sum Time
		f.done = func(id int32, r *flashReq) { sum += r.finish - r.start; span[i] = max(span[i], r.finish) }
		for k := range n {
			f.submit(Key(k), size, false)
		}
		drain(f)
		lat[i] = float64(sum) / n
	}
	thr := func(i int) float64 { return float64(n*size) / float64(span[i]) * 1e9 }
	if thr(1) < 1.5*thr(0) {
		t.Errorf("2 lanes should beat 1 lane: %.3g vs %.3g B/s", thr(1), thr(0))
	}
	if thr(2) > 2e9*1.0001 {
		t.Errorf("8 lanes exceed the aggregate ceiling: %.4g B/s", thr(2))
	}
	if math.Abs(thr(2)-thr(1))/thr(1) > 0.1 {
		t.Errorf("bandwidth past the knee should stay flat: 2 lanes %.4g, 8 lanes %.4g", thr(1), thr(2))
	}
	if lat[2] < 3*lat[1] {
		t.Errorf("per-read service time should grow past the knee: 2 lanes %.0f ns, 8 lanes %.0f ns", lat[1], lat[2])
	}
}

// Demand reads jump the queue of waiting prefetches (no preemption).
func TestDemandBeforeQueuedPrefetch(t *testing.T) {
	f := newFlash(testFlash(1))
	var order []Key
	f.done = func(id int32, r *flashReq) { order = append(order, r.key) }
	f.submit(1, 1000, false)
	f.submit(2, 1000, false)
	f.submit(3, 1000, true)
	drain(f)
	if want := []Key{1, 3, 2}; order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("order %v, want %v", order, want)
	}
}

func TestDurationRoundsUp(t *testing.T) {
	if got := durationNS(1, 3e9); got != 1 {
		t.Fatalf("1 byte at 3 GB/s = %d ns, want 1 (rounded up)", got)
	}
	if got := durationNS(0, 1); got != 0 {
		t.Fatalf("no work should take no time, got %d", got)
	}
}
