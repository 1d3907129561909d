package validation

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/runs"
)

// TestRoundOrder: round r starts at point r mod n and goes round; over n
// rounds every point is first once and every round runs every point once.
func TestRoundOrder(t *testing.T) {
	if got := RoundOrder(0, 4); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("round 0: %v", got)
	}
	if got := RoundOrder(1, 4); !slices.Equal(got, []int{1, 2, 3, 0}) {
		t.Errorf("round 1: %v", got)
	}
	if got := RoundOrder(6, 4); !slices.Equal(got, []int{2, 3, 0, 1}) {
		t.Errorf("round 6: %v", got)
	}
	if got := RoundOrder(3, 0); len(got) != 0 {
		t.Errorf("no points: %v", got)
	}
	if got := RoundOrder(-1, 4); !slices.Equal(got, []int{3, 0, 1, 2}) {
		t.Errorf("round -1: %v", got)
	}
	for n := 1; n <= 7; n++ {
		first := make([]int, n)
		for r := range n {
			o := RoundOrder(r, n)
			if s := slices.Sorted(slices.Values(o)); !slices.Equal(s, RoundOrder(0, n)) {
				t.Fatalf("n %d round %d: %v is not every point once", n, r, o)
			}
			first[o[0]]++
		}
		for i, c := range first {
			if c != 1 {
				t.Errorf("n %d: point %d first in %d of %d rounds", n, i, c, n)
			}
		}
	}
}

// seriesSamples are token samples as a live agent sends them for a run that
// asked for its series: n passes of made-up but consistent measurements.
func seriesSamples(n int) []agent.TokenSample {
	p := func(v int64) *int64 { return &v }
	out := make([]agent.TokenSample, n)
	var start int64
	for i := range out {
		wall, stall := int64(40_000_000+1_000_000*i), int64(3_000_000*(i%3))
		out[i] = agent.TokenSample{Pass: int64(i), Tokens: 1, StartNS: start, TimeNS: wall, StallNS: stall,
			ReadBytes: p(int64(i%3) * 1 << 20), Reads: p(int64(i % 3)), Hits: p(30 - int64(i%3)), Misses: p(int64(i % 3)), ResidentBytes: p(8 << 20),
			ComputeNS: p(wall - stall), InflightHits: p(1), PrefetchLoads: p(2), MajorFaults: p(int64(i % 2)), StrayBytes: p(0)}
		start += wall
	}
	return out
}

// TestLiveSeries: a remote fit run's samples become the series file a
// local fit run writes, read back as the same measurements; samples
// without the series are refused.
func TestLiveSeries(t *testing.T) {
	samples := seriesSamples(6)
	series, err := LiveSeries(samples)
	if err != nil {
		t.Fatal(err)
	}
	run, err := writeFitSeries(t.TempDir(), FitPoint{Policy: "les", Cache: "25%"}, 1, series)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(fitSeriesPath("x", FitPoint{Policy: "les", Cache: "25%"}, 1)) != "les-25pct-r2.parquet" || filepath.Base(run.Name) != "les-25pct-r2.parquet" {
		t.Errorf("series file %s", run.Name)
	}
	for _, f := range []runs.Field{runs.FieldWall, runs.FieldStall, runs.FieldCompute, runs.FieldRead, runs.FieldFaults} {
		if !run.Has(f) {
			t.Errorf("the series read back lacks %v", f)
		}
	}
	if len(run.Tokens) != len(samples) {
		t.Fatalf("%d tokens read back, want %d", len(run.Tokens), len(samples))
	}
	for i, tk := range run.Tokens {
		s := samples[i]
		if tk.WallNS != s.TimeNS || tk.StallNS != s.StallNS || tk.ComputeNS != *s.ComputeNS || tk.ReadBytes != *s.ReadBytes || tk.MajorFaults != *s.MajorFaults {
			t.Errorf("token %d: read back %+v from %+v", i, tk, s)
		}
	}

	plain := seriesSamples(3)
	plain[2] = plain[2].WithoutSeries()
	errgolden.Check(t, "no series", errgolden.Err(LiveSeries(plain)))
	stock := seriesSamples(2)
	stock[1].ReadBytes, stock[1].Reads = nil, nil
	if s, err := LiveSeries(stock); err != nil || s[1].BytesRead != 0 || s[1].Reads != 0 {
		t.Errorf("a stock page-fault sample (no reads): %v %+v", err, s)
	}
	bad := seriesSamples(2)
	bad[1].Pass = 5
	if _, err := LiveSeries(bad); err == nil {
		t.Error("a sample out of order accepted")
	}
}
