package reports

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/sim"
)

// VsPoint is one policy × cache size of a validation: its prediction and
// its measurements.
type VsPoint struct {
	Policy string
	// Cache is the size as the user gave it ("25%", "64MiB"); CacheBytes
	// is its value in bytes.
	Cache      string
	CacheBytes int64
	// Predicted is the simulated result; Measured has one result per repeat.
	Predicted *sim.Result
	Measured  []*sim.Result
}

// String names the point as a fit point is named: "les at 25%".
func (p VsPoint) String() string { return p.Policy + " at " + p.Cache }

// VsStats compares one point's prediction with its measurements.
type VsStats struct {
	Policy     string `json:"policy"`
	Cache      string `json:"cache"`
	CacheBytes int64  `json:"cache_bytes"`
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

// Comparison is a whole validation's predicted against measured.
type Comparison struct {
	Points []VsStats `json:"points"`
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
// exactly when there are held-out points (see Comparison.FitPoints).
func (c Comparison) MarshalJSON() ([]byte, error) {
	type plain Comparison // NB: no methods, so no recursion
	out := struct {
		plain
		HeldOutMAPE *float64 `json:"held_out_mape_pct,omitempty"`
		HeldOut     *int     `json:"held_out_points,omitempty"`
	}{plain: plain(c)}
	if c.HeldOut > 0 {
		out.HeldOut, out.HeldOutMAPE = &c.HeldOut, &c.HeldOutMAPE
	}
	return json.Marshal(out)
}

// MarkFit records that the profile was fitted to runs of the fit points
// (named as VsPoint.String names them) and computes the MAPE over the
// other points.
func (c *Comparison) MarkFit(fit []string) {
	c.FitPoints = slices.Clone(fit)
	var sum float64
	c.HeldOut, c.HeldOutMAPE = 0, 0
	for _, p := range c.Points {
		if !slices.Contains(fit, VsPoint{Policy: p.Policy, Cache: p.Cache}.String()) {
			sum += math.Abs(p.ErrorPct)
			c.HeldOut++
		}
	}
	if c.HeldOut > 0 {
		c.HeldOutMAPE = sum / float64(c.HeldOut)
	}
}

// Compare compares every point; points keep their order. A point without
// a prediction, without measurements, or with a measured speed of zero is
// an error.
func Compare(points []VsPoint) (*Comparison, error) {
	if len(points) == 0 {
		return nil, errors.New("validation: no points")
	}
	c := &Comparison{RankingPreserved: true}
	var sumAbs float64
	for _, p := range points {
		ps, err := vsStats(p)
		if err != nil {
			return nil, err
		}
		sumAbs += math.Abs(ps.ErrorPct)
		c.Points = append(c.Points, ps)
	}
	c.MAPE = sumAbs / float64(len(c.Points))
	c.Rankings = rankings(c.Points)
	for _, r := range c.Rankings {
		c.RankingPreserved = c.RankingPreserved && r.Preserved
	}
	return c, nil
}

func vsStats(p VsPoint) (VsStats, error) {
	where := fmt.Sprintf("validation: %s at cache %s", p.Policy, p.Cache)
	if p.Predicted == nil {
		return VsStats{}, fmt.Errorf("%s: no prediction", where)
	}
	if len(p.Measured) == 0 {
		return VsStats{}, fmt.Errorf("%s: no measurement", where)
	}
	ps := VsStats{Policy: p.Policy, Cache: p.Cache, CacheBytes: p.CacheBytes, Repeats: len(p.Measured),
		PredictedTPS: p.Predicted.TokensPerSec, PredictedHitRate: p.Predicted.HitRate,
		PredictedP50NS: p.Predicted.LatencyP50NS, PredictedP90NS: p.Predicted.LatencyP90NS,
		MeasuredMin: math.Inf(1), MeasuredMax: math.Inf(-1)}
	var tps, hit, p50, p90 float64
	for _, m := range p.Measured {
		if m == nil {
			return VsStats{}, fmt.Errorf("%s: a missing measurement", where)
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
		return VsStats{}, fmt.Errorf("%s: measured %g tokens/s: cannot compute a relative error", where, ps.MeasuredTPS)
	}
	ps.ErrorPct = 100 * (ps.PredictedTPS - ps.MeasuredTPS) / ps.MeasuredTPS
	return ps, nil
}

// rankings orders each cache size's policies (cache sizes in first-seen
// order) by predicted and by measured tokens/s; ties keep the policies'
// order of appearance.
func rankings(points []VsStats) []Ranking {
	var caches []string
	byCache := map[string][]VsStats{}
	for _, p := range points {
		if _, ok := byCache[p.Cache]; !ok {
			caches = append(caches, p.Cache)
		}
		byCache[p.Cache] = append(byCache[p.Cache], p)
	}
	out := make([]Ranking, 0, len(caches))
	for _, c := range caches {
		ps := byCache[c]
		r := Ranking{Cache: c, Predicted: order(ps, func(p VsStats) float64 { return p.PredictedTPS }),
			Measured: order(ps, func(p VsStats) float64 { return p.MeasuredTPS })}
		r.judge(ps)
		out = append(out, r)
	}
	return out
}

func order(ps []VsStats, speed func(VsStats) float64) []string {
	s := slices.Clone(ps)
	slices.SortStableFunc(s, func(a, b VsStats) int { return cmp.Compare(speed(b), speed(a)) })
	names := make([]string, len(s))
	for i, p := range s {
		names[i] = p.Policy
	}
	return names
}

// judge checks every pair of one cache size's points (see Ranking).
func (r *Ranking) judge(ps []VsStats) {
	for i := range ps {
		for j := range i {
			a, b := ps[j], ps[i]
			dp, dm := a.PredictedTPS-b.PredictedTPS, a.MeasuredTPS-b.MeasuredTPS
			pair := a.Policy + "/" + b.Policy
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

// WriteComparison prints the comparison: one line per point, then MAPE and
// the rankings.
func WriteComparison(w io.Writer, c *Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tcache\tpredicted tok/s\tmeasured tok/s (mean ± sd [min, max])\terror\thit rate pred/meas\tp50 ms pred/meas\tp90 ms pred/meas\t")
	for _, p := range c.Points {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f ± %.2f [%.2f, %.2f]\t%+.1f%%\t%.3f / %.3f\t%.2f / %.2f\t%.2f / %.2f\t\n",
			p.Policy, p.Cache, p.PredictedTPS, p.MeasuredTPS, p.MeasuredSD, p.MeasuredMin, p.MeasuredMax, p.ErrorPct,
			p.PredictedHitRate, p.MeasuredHitRate, nsMS(p.PredictedP50NS), nsMS(p.MeasuredP50NS), nsMS(p.PredictedP90NS), nsMS(p.MeasuredP90NS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "MAPE (tokens/s): %.1f%% over %s\n", c.MAPE, plural.Count(len(c.Points), "point"))
	switch fit := strings.Join(c.FitPoints, " and "); {
	case len(c.FitPoints) == 0:
	case c.HeldOut == 0:
		fmt.Fprintf(w, "profile fitted to separate live runs of %s; no held-out points: every point is a fit point, so the MAPE above is in-sample\n", fit)
	default:
		fmt.Fprintf(w, "profile fitted to separate live runs of %s; MAPE over the %d other points (held out): %.1f%%\n", fit, c.HeldOut, c.HeldOutMAPE)
	}
	for _, r := range c.Rankings {
		verdict := "preserved"
		if !r.Preserved {
			verdict = "NOT preserved (" + strings.Join(r.Flipped, ", ") + " measured in the other order beyond the spread)"
		}
		var notes []string
		if r.Ties {
			notes = append(notes, "equal predicted speeds are not ordered")
		}
		if len(r.WithinNoise) > 0 {
			notes = append(notes, strings.Join(r.WithinNoise, ", ")+" measured the other way within the spread")
		}
		if len(notes) > 0 {
			verdict += "; " + strings.Join(notes, "; ")
		}
		fmt.Fprintf(w, "ranking at cache %s: predicted %s, measured %s: %s\n", r.Cache,
			strings.Join(r.Predicted, " > "), strings.Join(r.Measured, " > "), verdict)
	}
	verdict := "yes"
	if !c.RankingPreserved {
		verdict = "no"
	}
	_, err := fmt.Fprintf(w, "ranking preserved at every cache size: %s\n", verdict)
	return err
}

func nsMS(ns int64) float64 { return float64(ns) / 1e6 }
