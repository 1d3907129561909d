package reports

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/sim"
)

func res(tps, hit float64, p50, p90 int64, source string) *sim.Result {
	return &sim.Result{TokensPerSec: tps, HitRate: hit, LatencyP50NS: p50, LatencyP90NS: p90, Source: source, Tokens: 8}
}

// knownPoints: at 25% the predicted order (les > lru) holds measured; at 40%
// it flips (lru measured faster).
func knownPoints() []VsPoint {
	pred := func(tps float64) *sim.Result { return res(tps, 0.5, 10e6, 20e6, sim.SourceSimulated) }
	meas := func(tps ...float64) []*sim.Result {
		var out []*sim.Result
		for _, t := range tps {
			out = append(out, res(t, 0.4, 12e6, 22e6, sim.SourceMeasured))
		}
		return out
	}
	return []VsPoint{
		{Policy: "lru", Cache: "25%", CacheBytes: 100, Predicted: pred(110), Measured: meas(90, 110)},  // mean 100: +10%
		{Policy: "les", Cache: "25%", CacheBytes: 100, Predicted: pred(150), Measured: meas(200, 200)}, // mean 200: −25%
		{Policy: "lru", Cache: "40%", CacheBytes: 160, Predicted: pred(100), Measured: meas(125)},      // +−20%
		{Policy: "les", Cache: "40%", CacheBytes: 160, Predicted: pred(120), Measured: meas(100)},      // +20%
	}
}

func TestSummarizeKnown(t *testing.T) {
	s, err := Compare(knownPoints())
	if err != nil {
		t.Fatal(err)
	}
	wantErr := []float64{10, -25, -20, 20}
	for i, p := range s.Points {
		if math.Abs(p.ErrorPct-wantErr[i]) > 1e-9 {
			t.Errorf("point %d error %g%%, want %g%%", i, p.ErrorPct, wantErr[i])
		}
	}
	if math.Abs(s.MAPE-18.75) > 1e-9 {
		t.Errorf("MAPE %g, want 18.75", s.MAPE)
	}
	p0 := s.Points[0]
	if p0.MeasuredTPS != 100 || p0.MeasuredMin != 90 || p0.MeasuredMax != 110 || math.Abs(p0.MeasuredSD-math.Sqrt(200)) > 1e-9 || p0.Repeats != 2 {
		t.Errorf("point 0 spread: %+v", p0)
	}
	if p0.MeasuredP50NS != 12e6 || p0.PredictedP90NS != 20e6 || p0.MeasuredHitRate != 0.4 || p0.PredictedHitRate != 0.5 {
		t.Errorf("point 0 latency/hit rate: %+v", p0)
	}
	if s.Points[2].MeasuredSD != 0 {
		t.Errorf("one repeat: stdev %g, want 0", s.Points[2].MeasuredSD)
	}
	if len(s.Rankings) != 2 || !s.Rankings[0].Preserved || s.Rankings[1].Preserved || s.RankingPreserved {
		t.Fatalf("rankings %+v, overall %v", s.Rankings, s.RankingPreserved)
	}
	if !slices.Equal(s.Rankings[1].Predicted, []string{"les", "lru"}) || !slices.Equal(s.Rankings[1].Measured, []string{"lru", "les"}) {
		t.Errorf("ranking at 40%%: %+v", s.Rankings[1])
	}
	if s.Rankings[0].Ties || s.Rankings[1].Ties {
		t.Errorf("no equal speeds, yet ties: %+v", s.Rankings)
	}
	// Fix the flip: every ranking holds.
	pts := knownPoints()
	pts[3].Measured = []*sim.Result{res(130, 0.4, 1, 2, sim.SourceMeasured)}
	s, err = Compare(pts)
	if err != nil || !s.RankingPreserved {
		t.Fatalf("all preserved: %v %+v", err, s)
	}
	// Equal predicted speeds are flagged.
	pts[1].Predicted.TokensPerSec = pts[0].Predicted.TokensPerSec
	if s, err = Compare(pts); err != nil || !s.Rankings[0].Ties || s.Rankings[1].Ties {
		t.Fatalf("ties: %v %+v", err, s.Rankings)
	}
}

// A pair measured in the other order but within the repeats' spread keeps
// the ranking (and is listed); beyond the spread it breaks it.
func TestRankingWithinNoise(t *testing.T) {
	m := func(tps ...float64) []*sim.Result {
		var out []*sim.Result
		for _, v := range tps {
			out = append(out, res(v, 0.5, 1, 2, sim.SourceMeasured))
		}
		return out
	}
	pts := []VsPoint{
		{Policy: "les", Cache: "25%", Predicted: res(105, 0.5, 1, 2, sim.SourceSimulated), Measured: m(96, 104)}, // mean 100, sd 5.66
		{Policy: "lru", Cache: "25%", Predicted: res(100, 0.5, 1, 2, sim.SourceSimulated), Measured: m(99, 105)}, // mean 102, sd 4.24
	}
	s, err := Compare(pts)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Rankings[0]; !r.Preserved || !slices.Equal(r.WithinNoise, []string{"les/lru"}) || len(r.Flipped) != 0 {
		t.Fatalf("within the spread: %+v", r)
	}
	pts[1].Measured = m(120, 121) // mean 120.5: 20.5 apart, spread 5.66 + 0.71
	if s, err = Compare(pts); err != nil || s.RankingPreserved || !slices.Equal(s.Rankings[0].Flipped, []string{"les/lru"}) {
		t.Fatalf("beyond the spread: %v %+v", err, s.Rankings)
	}
}

// MarkFit leaves the fit points out of the held-out MAPE.
func TestMarkFit(t *testing.T) {
	s, err := Compare(knownPoints()) // errors 10, −25, −20, 20 (%)
	if err != nil {
		t.Fatal(err)
	}
	s.MarkFit([]string{"les at 25%", "lru at 40%"})
	if s.HeldOut != 2 || math.Abs(s.HeldOutMAPE-15) > 1e-9 || len(s.FitPoints) != 2 || s.FitPoints[0] != "les at 25%" {
		t.Fatalf("held out %d points, MAPE %g, fit points %v; want 2, 15", s.HeldOut, s.HeldOutMAPE, s.FitPoints)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, s); err != nil || !strings.Contains(b.String(), "fitted to separate live runs of les at 25% and lru at 40%; MAPE over the 2 other points (held out): 15.0%") {
		t.Fatalf("table: %v\n%s", err, b.String())
	}
}

// With every point a fit point there is nothing held out: the table says
// so instead of a MAPE of 0.0% over no points, and the JSON has no
// held-out MAPE.
func TestMarkFitNoneHeldOut(t *testing.T) {
	s, err := Compare(knownPoints())
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, p := range knownPoints() {
		all = append(all, p.String())
	}
	s.MarkFit(all)
	var b bytes.Buffer
	if err := WriteComparison(&b, s); err != nil {
		t.Fatal(err)
	}
	if txt := b.String(); strings.Contains(txt, "held out): ") || !strings.Contains(txt, "no held-out points: every point is a fit point") {
		t.Errorf("table:\n%s", txt)
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "held_out") {
		t.Errorf("JSON states a held-out figure over no points: %s", js)
	}
}

func TestSummarizeBad(t *testing.T) {
	for name, mutate := range map[string]func([]VsPoint) []VsPoint{
		"no points":      func([]VsPoint) []VsPoint { return nil },
		"no prediction":  func(p []VsPoint) []VsPoint { p[0].Predicted = nil; return p },
		"no measurement": func(p []VsPoint) []VsPoint { p[1].Measured = nil; return p },
		"zero speed":     func(p []VsPoint) []VsPoint { p[2].Measured[0].TokensPerSec = 0; return p },
	} {
		if _, err := Compare(mutate(knownPoints())); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The table and the plot of known points.
func TestOutputs(t *testing.T) {
	pts := knownPoints()
	s, err := Compare(pts)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+10.0%", "-25.0%", "100.00 ± 14.14 [90.00, 110.00]", "MAPE (tokens/s): 18.8% over 4 points",
		"ranking at cache 40%: predicted les > lru, measured lru > les: NOT preserved", "ranking preserved at every cache size: no"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	dir := t.TempDir()
	files, err := WriteComparisonPlot(s, filepath.Join(dir, "scatter"))
	if err != nil || len(files) != 2 {
		t.Fatalf("plot: %v %v", files, err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The JSON keeps a held-out MAPE of exactly 0%, and has no held-out keys
// without a fit or without held-out points.
func TestSummaryJSONHeldOut(t *testing.T) {
	s, err := Compare(knownPoints())
	if err != nil {
		t.Fatal(err)
	}
	keys := func() map[string]any {
		t.Helper()
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := keys(); m["held_out_points"] != nil || m["held_out_mape_pct"] != nil || m["mape_pct"] == nil {
		t.Fatalf("no fit: %v", m)
	}
	for i := range s.Points { // every held-out point exact: a MAPE of 0
		if s.Points[i].Policy != "les" || s.Points[i].Cache != "25%" {
			s.Points[i].ErrorPct = 0
		}
	}
	s.MarkFit([]string{"les at 25%"})
	if m := keys(); m["held_out_points"] != 3.0 || m["held_out_mape_pct"] != 0.0 {
		t.Fatalf("held-out MAPE of 0: %v", m)
	}
	var all []string
	for _, p := range s.Points {
		all = append(all, VsPoint{Policy: p.Policy, Cache: p.Cache}.String())
	}
	s.MarkFit(all)
	if m := keys(); m["held_out_points"] != nil || m["held_out_mape_pct"] != nil {
		t.Fatalf("every point fitted: %v", m)
	}
}
