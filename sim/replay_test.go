package sim_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// Replaying BigMoeOnEdge's phone traces through lru at the recording's budget
// and batching reproduces every recorded residency flag.
//
// Reference: ../shared/reference/README.md (traces by github.com/Helldez/BigMoeOnEdge,
// Apache-2.0): a byte-budgeted global LRU at 4000 MiB reproduces 100% of rows;
// decode-only hit rates 80.29% (qwen) and 81.91% (gemma).
func TestReplayReproducesRecordedResidency(t *testing.T) {
	for _, tc := range []struct {
		file    string
		hitRate float64
	}{{"qwen.route.csv", 0.8029}, {"gemma.route.csv", 0.8191}} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("..", "..", "shared", "reference", "traces", tc.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("reference trace absent: %v", err)
			}
			meta, steps, err := traces.ImportBMoE(path)
			if err != nil {
				t.Fatal(err)
			}
			m := &meta.Model
			cfg := sim.Config{Model: m, Device: tinyDevice(), CacheBytes: 4000 << 20, Layout: sim.LayoutPerExpert,
				CachedFirst: true, SpecBlock: 1, Prefill: true}
			pol, err := policies.New("lru", policies.DefaultParams(m))
			if err != nil {
				t.Fatal(err)
			}
			// The recorded flag of a (pass, layer, expert) is its first row's.
			type use struct {
				pass          int32
				layer, expert int
				seq           int32
			}
			recorded := map[use]bool{}
			for i := range steps {
				s := &steps[i]
				for l, ls := range s.Layers {
					for r, x := range ls.Experts {
						u := use{s.Pass, l, int(x), s.Seq}
						if _, ok := recorded[u]; !ok {
							recorded[u] = ls.Hit[r]
						}
					}
				}
			}
			var n, mismatches int
			res, err := sim.RunTap(cfg, steps, pol, func(u sim.UseRecord) {
				s := &steps[u.Step]
				want, ok := recorded[use{s.Pass, u.Layer, u.Expert, s.Seq}]
				if !ok {
					t.Fatalf("pass %d layer %d expert %d: not in the trace", u.Pass, u.Layer, u.Expert)
				}
				n++
				if want != (u.State == sim.Resident) {
					mismatches++
					if mismatches <= 5 {
						t.Errorf("step %d layer %d expert %d: simulated hit %v, recorded %v", u.Step, u.Layer, u.Expert, u.State == sim.Resident, want)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(recorded) || mismatches > 0 {
				t.Fatalf("%d of %d uses differ (uses seen %d)", mismatches, len(recorded), n)
			}
			if d := res.HitRate - tc.hitRate; d > 0.0001 || d < -0.0001 {
				t.Errorf("decode hit rate %.4f, recorded %.4f", res.HitRate, tc.hitRate)
			}
		})
	}
}
