package validation

import (
	"slices"
	"testing"

	"github.com/lessim/lessim/sim"
)

func TestParseGrid(t *testing.T) {
	g, err := ParseGrid("1,2,4", "1,2")
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}}
	if !slices.Equal(g, want) {
		t.Errorf("grid %v, want %v", g, want)
	}
	if g, err := ParseGrid("", ""); g != nil || err != nil {
		t.Errorf("no grid: %v, %v", g, err)
	}
	for _, bad := range [][2]string{{"1,2", ""}, {"", "1"}, {"0,1", "1"}, {"1", "257"}, {"1,1", "1"}, {"x", "1"}} {
		if _, err := ParseGrid(bad[0], bad[1]); err == nil {
			t.Errorf("grid lanes %q threads %q accepted", bad[0], bad[1])
		}
	}
}

// TestGridPairs: in a grid, a cache size's ranking judges only the pairs
// that differ in one of policy, lanes and threads. Here les L1 T1 and
// ondemand L2 T2 differ in all three and are measured the other way: not
// judged; les L1 T1 / les L2 T1 (lanes only) is measured the other way and
// flipped.
func TestGridPairs(t *testing.T) {
	pt := func(pol string, h Host, pred, meas float64) Point {
		return Point{Policy: pol, Cache: "15%", CacheBytes: 1, Host: h,
			Predicted: res(pred, 0.5, 1, 1, sim.SourceSimulated), Measured: []*sim.Result{res(meas, 0.5, 1, 1, sim.SourceMeasured)}}
	}
	s, err := Summarize([]Point{
		pt("les", Host{1, 1}, 10, 5),
		pt("ondemand", Host{2, 2}, 8, 9),
		pt("les", Host{2, 1}, 9, 6),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Rankings[0]
	if !slices.Equal(r.Flipped, []string{"les L1 T1/les L2 T1"}) || r.Preserved || s.RankingPreserved {
		t.Errorf("flipped %v preserved %v, want only the lanes pair flipped", r.Flipped, r.Preserved)
	}
	if s.Points[1].Lanes != 2 || s.Points[1].Threads != 2 || s.Points[1].label() != "ondemand L2 T2" {
		t.Errorf("point 1: %+v", s.Points[1])
	}
	s.MarkFit([]FitPoint{{Policy: "les", Cache: "15%", Host: Host{1, 1}}})
	if s.HeldOut != 2 {
		t.Errorf("held out %d, want 2 (the fit point is les at 15%% L1 T1 only)", s.HeldOut)
	}
}
