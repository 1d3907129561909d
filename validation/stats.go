package validation

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/lessim/lessim/sim"
)

// Point is one policy × cache size: its prediction and its measurements.
type Point struct {
	Policy string
	// Cache is the size as the user gave it ("25%", "64MiB"); CacheBytes
	// is its value in bytes.
	Cache      string
	CacheBytes int64
	Host       Host // its live configuration in a grid (Options.Grid)
	// Predicted is the simulated result; Measured has one result per repeat.
	Predicted *sim.Result
	Measured  []*sim.Result
}

// PointStats compares one point's prediction with its measurements.
type PointStats struct {
	Policy     string `json:"policy"`
	Cache      string `json:"cache"`
	CacheBytes int64  `json:"cache_bytes"`
	Lanes      int    `json:"lanes,omitempty"` // a grid point's (Options.Grid)
	Threads    int    `json:"threads,omitempty"`
	// PredictedTPS is the simulated tokens/s; MeasuredTPS the mean over the
	// repeats, with their minimum, maximum and sample standard deviation
	// (0 with one repeat).
	PredictedTPS float64 `json:"predicted_tokens_per_sec"`
	MeasuredTPS  float64 `json:"measured_tokens_per_sec"`
	MeasuredMin  float64 `json:"measured_min_tokens_per_sec"`
	MeasuredMax  float64 `json:"measured_max_tokens_per_sec"`
	MeasuredSD   float64 `json:"measured_stdev_tokens_per_sec"`
	Repeats      int     `json:"repeats"`
	// ErrorPct is 100 × (predicted − measured) / measured.
	ErrorPct float64 `json:"error_pct"`
	// Hit rates: predicted, and the mean over the repeats.
	PredictedHitRate float64 `json:"predicted_hit_rate"`
	MeasuredHitRate  float64 `json:"measured_hit_rate"`
	// Per-token latency percentiles: predicted, and the mean over the
	// repeats of each repeat's percentile.
	PredictedP50NS int64 `json:"predicted_p50_ns"`
	PredictedP90NS int64 `json:"predicted_p90_ns"`
	MeasuredP50NS  int64 `json:"measured_p50_ns"`
	MeasuredP90NS  int64 `json:"measured_p90_ns"`
}

// Ranking is one cache size's policies ordered by tokens/s, fastest first.
//
// Preserved is judged pair by pair: a pair the prediction orders (unequal
// predicted speeds) must be measured in the same order, or so close that
// the measurement cannot order it: the measured means differ by no more
// than the sum of the two points' standard deviations over repeats (with
// one repeat there is no spread, so the order must hold). A pair predicted
// exactly equal (e.g. two policies that load and evict alike) constrains
// nothing.
type Ranking struct {
	Cache     string   `json:"cache"`
	Predicted []string `json:"predicted"`
	Measured  []string `json:"measured"`
	Preserved bool     `json:"preserved"`
	// Ties are true when two policies' predicted speeds are exactly equal:
	// their relative order is not predicted.
	Ties bool `json:"ties"`
	// WithinNoise lists the pairs ("les/ondemand") measured in the other
	// order but within the measurements' spread.
	WithinNoise []string `json:"within_noise,omitempty"`
	// Flipped lists the pairs measured in the other order beyond it.
	Flipped []string `json:"flipped,omitempty"`
}

// Summary is the whole comparison.
type Summary struct {
	Points []PointStats `json:"points"`
	// MAPE is the mean absolute percentage error of tokens/s over the points.
	MAPE     float64   `json:"mape_pct"`
	Rankings []Ranking `json:"rankings"`
	// RankingPreserved is true when every cache size's ranking is.
	RankingPreserved bool `json:"ranking_preserved"`
	// FitPoints are the policies and caches ("ondemand at 25%") whose
	// separate live runs the profile was fitted to (none = no fit);
	// HeldOutMAPE is the MAPE over the HeldOut other points, whose
	// configurations the fit never saw. With no such point there is no
	// MAPE: both keys are left out of the JSON; otherwise both are present,
	// a MAPE of exactly 0% too (MarshalJSON): a missing key means "no such
	// number", never zero.
	FitPoints   []string `json:"fit_points,omitempty"`
	HeldOutMAPE float64  `json:"-"`
	HeldOut     int      `json:"-"`
}

// MarshalJSON is the default encoding with the held-out fields present
// exactly when there are held-out points (see Summary.FitPoints).
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary // NB: no methods, so no recursion
	out := struct {
		plain
		HeldOutMAPE *float64 `json:"held_out_mape_pct,omitempty"`
		HeldOut     *int     `json:"held_out_points,omitempty"`
	}{plain: plain(s)}
	if s.HeldOut > 0 {
		out.HeldOut, out.HeldOutMAPE = &s.HeldOut, &s.HeldOutMAPE
	}
	return json.Marshal(out)
}

// MarkFit records that the profile was fitted to runs of the fit points
// and computes the MAPE over the other points.
func (s *Summary) MarkFit(fit []FitPoint) {
	s.FitPoints = nil
	for _, f := range fit {
		s.FitPoints = append(s.FitPoints, f.String())
	}
	var sum float64
	s.HeldOut, s.HeldOutMAPE = 0, 0
	for _, p := range s.Points {
		if slices.Contains(s.FitPoints, FitPoint{Policy: p.Policy, Cache: p.Cache, Host: p.host()}.String()) {
			continue
		}
		sum += math.Abs(p.ErrorPct)
		s.HeldOut++
	}
	if s.HeldOut > 0 {
		s.HeldOutMAPE = sum / float64(s.HeldOut)
	}
}

// Summarize compares every point; points keep their order. A point without
// a prediction, without measurements, or with a measured speed of zero is
// an error.
func Summarize(points []Point) (*Summary, error) {
	if len(points) == 0 {
		return nil, errors.New("validation: no points")
	}
	s := &Summary{RankingPreserved: true}
	var sumAbs float64
	for _, p := range points {
		ps, err := pointStats(p)
		if err != nil {
			return nil, err
		}
		sumAbs += math.Abs(ps.ErrorPct)
		s.Points = append(s.Points, ps)
	}
	s.MAPE = sumAbs / float64(len(s.Points))
	s.Rankings = rankings(s.Points)
	for _, r := range s.Rankings {
		s.RankingPreserved = s.RankingPreserved && r.Preserved
	}
	return s, nil
}

func pointStats(p Point) (PointStats, error) {
	where := fmt.Sprintf("validation: %s at cache %s", p.Policy, p.Cache)
	if p.Predicted == nil {
		return PointStats{}, fmt.Errorf("%s: no prediction", where)
	}
	if len(p.Measured) == 0 {
		return PointStats{}, fmt.Errorf("%s: no measurement", where)
	}
	ps := PointStats{Policy: p.Policy, Cache: p.Cache, CacheBytes: p.CacheBytes, Lanes: p.Host.Lanes, Threads: p.Host.Threads, Repeats: len(p.Measured),
		PredictedTPS: p.Predicted.TokensPerSec, PredictedHitRate: p.Predicted.HitRate,
		PredictedP50NS: p.Predicted.LatencyP50NS, PredictedP90NS: p.Predicted.LatencyP90NS,
		MeasuredMin: math.Inf(1), MeasuredMax: math.Inf(-1)}
	var tps, hit, p50, p90 float64
	for _, m := range p.Measured {
		if m == nil {
			return PointStats{}, fmt.Errorf("%s: a missing measurement", where)
		}
		tps += m.TokensPerSec
		hit += m.HitRate
		p50 += float64(m.LatencyP50NS)
		p90 += float64(m.LatencyP90NS)
		ps.MeasuredMin, ps.MeasuredMax = min(ps.MeasuredMin, m.TokensPerSec), max(ps.MeasuredMax, m.TokensPerSec)
	}
	n := float64(len(p.Measured))
	ps.MeasuredTPS, ps.MeasuredHitRate = tps/n, hit/n
	ps.MeasuredP50NS, ps.MeasuredP90NS = int64(math.Round(p50/n)), int64(math.Round(p90/n))
	if len(p.Measured) > 1 {
		var ss float64
		for _, m := range p.Measured {
			d := m.TokensPerSec - ps.MeasuredTPS
			ss += d * d
		}
		ps.MeasuredSD = math.Sqrt(ss / (n - 1))
	}
	if !(ps.MeasuredTPS > 0) {
		return PointStats{}, fmt.Errorf("%s: measured %g tokens/s: cannot compute a relative error", where, ps.MeasuredTPS)
	}
	ps.ErrorPct = 100 * (ps.PredictedTPS - ps.MeasuredTPS) / ps.MeasuredTPS
	return ps, nil
}

// rankings orders each cache size's policies (cache sizes in first-seen
// order) by predicted and by measured tokens/s; ties keep the policies'
// order of appearance.
func rankings(points []PointStats) []Ranking {
	var caches []string
	byCache := map[string][]PointStats{}
	for _, p := range points {
		if _, ok := byCache[p.Cache]; !ok {
			caches = append(caches, p.Cache)
		}
		byCache[p.Cache] = append(byCache[p.Cache], p)
	}
	out := make([]Ranking, 0, len(caches))
	for _, c := range caches {
		ps := byCache[c]
		r := Ranking{Cache: c, Predicted: order(ps, func(p PointStats) float64 { return p.PredictedTPS }),
			Measured: order(ps, func(p PointStats) float64 { return p.MeasuredTPS })}
		r.judge(ps)
		out = append(out, r)
	}
	return out
}

func order(ps []PointStats, speed func(PointStats) float64) []string {
	s := slices.Clone(ps)
	slices.SortStableFunc(s, func(a, b PointStats) int { return cmp.Compare(speed(b), speed(a)) })
	names := make([]string, len(s))
	for i, p := range s {
		names[i] = p.label()
	}
	return names
}

func (p PointStats) host() Host { return Host{p.Lanes, p.Threads} }

// label names p within its cache size: the policy, and a grid point's
// lanes and threads.
func (p PointStats) label() string { return p.Policy + p.host().suffix() }

// oneApart reports whether a and b differ in exactly one of policy, lanes
// and threads: the pairs a ranking judges (without a grid, every pair).
func oneApart(a, b PointStats) bool {
	n := 0
	for _, d := range []bool{a.Policy != b.Policy, a.Lanes != b.Lanes, a.Threads != b.Threads} {
		if d {
			n++
		}
	}
	return n == 1
}

// judge checks every pair of one cache size's points (see Ranking).
func (r *Ranking) judge(ps []PointStats) {
	for i := range ps {
		for j := range i {
			a, b := ps[j], ps[i]
			if !oneApart(a, b) {
				continue
			}
			dp, dm := a.PredictedTPS-b.PredictedTPS, a.MeasuredTPS-b.MeasuredTPS
			pair := a.label() + "/" + b.label()
			switch {
			case dp == 0:
				r.Ties = true
			case dp*dm > 0:
			case math.Abs(dm) <= a.MeasuredSD+b.MeasuredSD:
				r.WithinNoise = append(r.WithinNoise, pair)
			default:
				r.Flipped = append(r.Flipped, pair)
			}
		}
	}
	r.Preserved = len(r.Flipped) == 0
}
