package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/lessim/lessim/fit"
	"github.com/lessim/lessim/sim"
)

// WriteRunFit writes a profile fitted to a measured run (calibrate
// --from-run): what the replay ran (policy, cacheBytes) and how its flash
// bytes matched, each fitted value with its standard error, the per-token
// residuals and what was kept as it was.
func WriteRunFit(w io.Writer, r *fit.RunFit, policy string, cacheBytes int64) {
	e := r.Errors
	bytes := fmt.Sprintf("simulated flash bytes within 1%% of measured on %d of %d tokens", r.BytesMatched, r.BytesChecked)
	if r.BytesChecked == 0 {
		bytes = "the run records no bytes read, so the replay's flash bytes are not checked"
	}
	fmt.Fprintf(w, "fitted to %d measured tokens (replay: %s, cache %s; %s)\n",
		r.Tokens, policy, sim.FormatBytes(cacheBytes), bytes)
	if r.Load != nil {
		fmt.Fprintf(w, "  %-22s %.4g ms per MB ± %.2g (management time vs bytes read: intercept %.2f ms/token, R² %.3f)\n",
			fit.ParamLoadRate, r.Load.Slope, r.Load.SlopeSE, r.Load.Intercept/1e6, r.Load.R2)
	}
	for _, p := range r.Params {
		switch {
		case !p.Identified:
			fmt.Fprintf(w, "  %-22s %.4g  (not identified: %s; kept as it was)\n", p.Name, p.Value, p.Why)
		case p.Why != "":
			fmt.Fprintf(w, "  %-22s %.4g ± %.2g  (%s)\n", p.Name, p.Value, p.SE, p.Why)
		default:
			fmt.Fprintf(w, "  %-22s %.4g ± %.2g\n", p.Name, p.Value, p.SE)
		}
	}
	fmt.Fprintf(w, "\nper-token time: mean %.1f ms predicted vs %.1f measured (%+.1f%%), median %.1f vs %.1f (%+.1f%%)\n",
		e.MeanPredNS/1e6, e.MeanMeasNS/1e6, 100*(e.MeanPredNS/e.MeanMeasNS-1),
		e.MedianPredNS/1e6, e.MedianMeasNS/1e6, 100*(e.MedianPredNS/e.MedianMeasNS-1))
	fmt.Fprintf(w, "per-token error: mean %+.1f%%, |error| p50 %.1f%%, p90 %.1f%%\n", 100*e.Mean, 100*e.P50Abs, 100*e.P90Abs)
	fmt.Fprintln(w, "\nkept as they were:")
	for _, k := range r.Kept {
		fmt.Fprintf(w, "  - %s\n", k)
	}
}

// WriteFitSummary says in one line what profile was fitted to (the points,
// as validate names them) and how well (validate --fit).
func WriteFitSummary(w io.Writer, profile string, points []string, r *fit.RunFit) {
	var ps []string
	for _, p := range r.Params {
		v := fmt.Sprintf("%s %.4g ± %.2g", p.Name, p.Value, p.SE)
		if !p.Identified {
			v = fmt.Sprintf("%s %.4g (not identified by this run: kept)", p.Name, p.Value)
		}
		ps = append(ps, v)
	}
	fmt.Fprintf(w, "profile %s fitted to separate live runs of %s (%d tokens): %s; on those runs per-token |error| p50 %.1f%%, p90 %.1f%%\n",
		profile, strings.Join(points, " and "), r.Tokens, strings.Join(ps, ", "), 100*r.Errors.P50Abs, 100*r.Errors.P90Abs)
}
