package validation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/sweep"
)

// WriteTable prints the comparison: one line per point, then MAPE and the
// rankings.
func WriteTable(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tcache\tpredicted tok/s\tmeasured tok/s (mean ± sd [min, max])\terror\thit rate pred/meas\tp50 ms pred/meas\tp90 ms pred/meas\t")
	for _, p := range s.Points {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f ± %.2f [%.2f, %.2f]\t%+.1f%%\t%.3f / %.3f\t%.2f / %.2f\t%.2f / %.2f\t\n",
			p.label(), p.Cache, p.PredictedTPS, p.MeasuredTPS, p.MeasuredSD, p.MeasuredMin, p.MeasuredMax, p.ErrorPct,
			p.PredictedHitRate, p.MeasuredHitRate, ms(p.PredictedP50NS), ms(p.MeasuredP50NS), ms(p.PredictedP90NS), ms(p.MeasuredP90NS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "MAPE (tokens/s): %.1f%% over %s\n", s.MAPE, plural.Count(len(s.Points), "point"))
	switch fit := strings.Join(s.FitPoints, " and "); {
	case len(s.FitPoints) == 0:
	case s.HeldOut == 0:
		fmt.Fprintf(w, "profile fitted to separate live runs of %s; no held-out points: every point is a fit point, so the MAPE above is in-sample\n", fit)
	default:
		fmt.Fprintf(w, "profile fitted to separate live runs of %s; MAPE over the %d other points (held out): %.1f%%\n", fit, s.HeldOut, s.HeldOutMAPE)
	}
	for _, r := range s.Rankings {
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
	if !s.RankingPreserved {
		verdict = "no"
	}
	_, err := fmt.Fprintf(w, "ranking preserved at every cache size: %s\n", verdict)
	return err
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// Rows are the results rows of the points, in sweep's schema: per point one
// row of source "simulated" and one row of source "measured" per repeat, all
// with the simulated spec (specs[i] for points[i]) and the same point_id and
// run_hash (the spec's hash), so that lessim report pairs them.
func Rows(points []Point, specs []experiment.Spec, version string) ([]sweep.Row, string, error) {
	if len(points) != len(specs) {
		return nil, "", fmt.Errorf("validation: %d points but %d specs", len(points), len(specs))
	}
	h := sha256.New()
	for _, s := range specs {
		h.Write([]byte(s.Hash() + "\n"))
	}
	id := "validate-" + hex.EncodeToString(h.Sum(nil))[:16]
	var rows []sweep.Row
	for i, p := range points {
		hash := specs[i].Hash()
		row := func(r *sim.Result) sweep.Row {
			return sweep.Row{PointID: hash, PointIndex: i, SweepID: id, LessimVersion: version, RunHash: hash, Spec: specs[i], Result: r}
		}
		rows = append(rows, row(p.Predicted))
		for _, m := range p.Measured {
			rows = append(rows, row(m))
		}
	}
	return rows, id, nil
}

// WriteRows writes rows as one Parquet file at path, atomically.
func WriteRows(path, sweepID string, rows []sweep.Row) error {
	data, err := sweep.EncodeRows(sweepID, rows)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data)
}
