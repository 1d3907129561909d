package policies

import (
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

// benchModel has the reference model's shape: 40 MoE layers × 256 experts,
// top-8, Q3_K experts of 1,351,680 bytes (DESIGN.md).
func benchModel() *devices.ModelSpec {
	sizes := make([]int64, 40)
	for i := range sizes {
		sizes[i] = 1_351_680
	}
	return testModel(256, 8, sizes...)
}

// BenchmarkReplay drives each policy through the fixture replay loop (with
// prefetch admission) on a 64-token trace with depth-1 lookahead scores and a
// 3 GB cache, reporting policy calls per second.
func BenchmarkReplay(b *testing.B) {
	m := benchModel()
	st := randomTrace(rand.New(rand.NewPCG(1, 2)), m, 64, 1)
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			p := DefaultParams(m)
			p.Trace = st
			var events int64
			for b.Loop() {
				rp := newReplayer(m, 3_000_000_000, mustPolicy(b, name, p), true)
				if _, err := rp.run(st); err != nil {
					b.Fatal(err)
				}
				events += rp.events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkLESPrefetch is one moment-1 selection over 256 scores for one token.
func BenchmarkLESPrefetch(b *testing.B) {
	m := benchModel()
	r := rand.New(rand.NewPCG(3, 4))
	sc := make([]float32, 256)
	for i := range sc {
		sc[i] = float32(r.NormFloat64())
	}
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"top8", DefaultParams(m)},
		{"threshold0.8", Params{Model: m, Depth: 1, Prefetch: true, Threshold: 0.8}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			pol := mustPolicy(b, "les", tc.p)
			v := newFixtureView(m, 1<<40)
			la := &sim.Lookahead{Layer: 3, Steps: []int64{0}, Scores: [][][]float32{{sc}}}
			dst := make([]sim.Key, 0, 64)
			for b.Loop() {
				dst = pol.Prefetch(la, v, dst[:0])
			}
		})
	}
}

// BenchmarkLRUEvent is one Used event plus one victim choice.
func BenchmarkLRUEvent(b *testing.B) {
	m := benchModel()
	pol := mustPolicy(b, "lru", Params{Model: m})
	v := newFixtureView(m, 1<<40)
	for k := range sim.Key(4096) {
		v.set(k, sim.Resident)
		pol.Observe(sim.Event{Kind: sim.Admitted, Key: k})
	}
	k := sim.Key(0)
	for b.Loop() {
		pol.Observe(sim.Event{Kind: sim.Used, Key: k % 4096})
		pol.Victim(v, 1, false)
		k += 7
	}
}
