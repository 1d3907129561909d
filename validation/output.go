package validation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/lessim/lessim/experiment"
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
