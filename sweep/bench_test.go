package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/cputime"
	"github.com/lessim/lessim/traces"
)

// referenceTrace is the BigMoeOnEdge route trace of Qwen3-30B-A3B, shared
// beside the repository (not committed).
const referenceTrace = "../../shared/reference/traces/qwen.route.csv"

// importReference writes the imported reference trace to dir/qwen.parquet.
func importReference(b *testing.B, dir string) string {
	if _, err := os.Stat(referenceTrace); err != nil {
		b.Skipf("reference trace absent: %v", err)
	}
	meta, steps, err := traces.ImportBMoE(referenceTrace)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "qwen.parquet")
	if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchSweep expands src and runs it into a fresh folder per iteration.
func benchSweep(b *testing.B, src string, points int) {
	g, err := ParseGrid([]byte(src), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pts, err := g.Expand()
	if err != nil {
		b.Fatal(err)
	}
	if len(pts) != points {
		b.Fatalf("%d points, want %d", len(pts), points)
	}
	cpu0 := cputime.Seconds()
	b.ResetTimer()
	for i := range b.N {
		out := filepath.Join(b.TempDir(), fmt.Sprint(i))
		// Expansion again: it digests the trace file, part of the sweep's cost.
		pts, err := g.Expand()
		if err != nil {
			b.Fatal(err)
		}
		sum, err := Run(context.Background(), g.Name, pts, Options{Out: out, Version: "bench"})
		if err != nil || sum.Failed > 0 {
			b.Fatal(err, sum.Errors)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sweep")
	// NB: CPU seconds (all threads) say what the sweep costs when the shared
	// machine is busy and wall time is not the sweep's own.
	b.ReportMetric((cputime.Seconds()-cpu0)/float64(b.N), "cpu-s/sweep")
}

// BenchmarkReplaySweep27 is the 27-point replay sweep (oracle, lru, lfu ×
// nine cache budgets) on the imported reference trace: read the trace once,
// run every point on all cores, write the results. Target: under 0.3 s.
func BenchmarkReplaySweep27(b *testing.B) {
	trace := importReference(b, b.TempDir())
	src := fmt.Sprintf(`base:
  trace: {path: %s}
  device: {name: ufs4-phone-12gb}
  prefill: true
axes:
  policy.name: [oracle, lru, lfu]
  cache.size: [250MiB, 500MiB, 1000MiB, 1500MiB, 2000MiB, 3000MiB, 4000MiB, 5000MiB, 6000MiB]
`, trace)
	benchSweep(b, src, 27)
}

// BenchmarkSynthSweep1000 is 1,000 points over 2,000-token synthetic traces
// of the 40-layer, 256-expert, top-8 shape (MiniCPM-V 4.7): 5 trace seeds ×
// 4 policies (lru, les, oracle, lfu) × 50 cache sizes. Target: under 2
// minutes on 2 cores.
func BenchmarkSynthSweep1000(b *testing.B) {
	var caches []string
	for mib := 1024; len(caches) < 50; mib += 256 {
		caches = append(caches, fmt.Sprintf("%dMiB", mib))
	}
	m, err := devices.LookupModel("minicpm-v-4.7-35b-a3b", "")
	if err != nil || len(m.Layers) != 40 || m.Experts != 256 || m.TopK != 8 {
		b.Fatalf("model shape: %v", err)
	}
	src := `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 2000}}
  device: {name: iphone-17-pro-max}
axes:
  trace.synthetic.seed: [1, 2, 3, 4, 5]
  policy.name: [lru, les, oracle, lfu]
  cache.size: [` + strings.Join(caches, ", ") + `]
`
	benchSweep(b, src, 1000)
}
