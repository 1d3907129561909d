package validation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/sweep"
)

// Rows are the results rows of the points, in sweep's schema: per point one
// row of source "simulated" and one row of source "measured" per repeat, all
// with the simulated spec (specs[i] for points[i]) and the same point_id and
// run_hash (the spec's hash), so that lessim report pairs them.
func Rows(points []reports.VsPoint, specs []experiment.Spec, version string) ([]sweep.Row, string, error) {
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

// Write prints the report to w (where and how it measured, the fit, the
// table), writes the table, the results rows and the plot into the
// report's stage and moves every file into o.Out (Stage.Commit); until
// then Out is as it was.
func (rep *Report) Write(w io.Writer, o *Options) error {
	var table bytes.Buffer
	if err := reports.WriteComparison(&table, rep.Summary); err != nil {
		return err
	}
	if rep.Facts != nil {
		fmt.Fprintf(w, "measured on %s\n", DescribeFacts(*rep.Facts, rep.Target))
		fmt.Fprintf(w, "trace %s (recorded by the agent), %d decode tokens, %d run(s) per point on the agent\n", rep.Trace, o.Tokens, o.Repeats)
	} else {
		threads := "1 compute thread"
		if len(o.Grid) > 0 {
			threads = "lanes (L) and compute threads (T) per point"
		}
		fmt.Fprintf(w, "trace %s, %d decode tokens, %d live repeat(s) per point, %s\n", rep.Trace, o.Tokens, o.Repeats, threads)
	}
	if ft := rep.Fit; ft != nil {
		reports.WriteFitSummary(w, ft.Profile, ft.names(), ft.Fit)
	}
	if _, err := w.Write(table.Bytes()); err != nil {
		return err
	}
	st := rep.Stage
	if err := atomicfile.WriteFile(filepath.Join(st.Dir(), TableFile), table.Bytes()); err != nil {
		return err
	}
	rows, id, err := Rows(rep.Points, rep.Specs, o.Version)
	if err != nil {
		return err
	}
	if err := sweep.WriteRows(filepath.Join(st.Dir(), ResultsFile), id, rows); err != nil {
		return err
	}
	staged, err := reports.WriteComparisonPlot(rep.Summary, filepath.Join(st.Dir(), PlotPrefix))
	if err != nil {
		return err
	}
	if err := st.Commit(); err != nil {
		return err
	}
	var files []string
	for _, f := range staged {
		files = append(files, st.Target(f))
	}
	fmt.Fprintf(w, "wrote %s (%d rows), %s, %s\n", filepath.Join(o.Out, ResultsFile), len(rows), filepath.Join(o.Out, TableFile), strings.Join(files, ", "))
	return nil
}
