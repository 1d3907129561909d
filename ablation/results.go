package ablation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lessim/lessim/sweep"
)

// ResultsFile is the Parquet file WriteResults writes in a results folder.
const ResultsFile = "ablation.parquet"

// Columns ablation rows carry beside the results columns (reports reads
// ablation_step and ablation_order to draw the ablation bars).
const (
	ColStep  = "ablation_step"  // the step's label, e.g. "+ lookahead prefetch"
	ColOrder = "ablation_order" // the step's 1-based position (Row.Order)
	ColKey   = "ablation_key"   // the step's short name, e.g. "lookahead"
)

// ResultRows are the ablation's steps that ran as results rows, in step
// order: the same schema as a sweep's rows (every field of the resolved spec
// and every Result metric; point_id and run_hash are the spec hash,
// point_index is the order − 1), and the extra columns ablation_step,
// ablation_order and ablation_key. Skipped steps have no row (they have no
// spec); the table and JSON outputs say why they were skipped.
func ResultRows(a *Ablation, version string) ([]sweep.Row, []sweep.Extra) {
	var ran []*Row
	h := sha256.New()
	for i := range a.Rows {
		if r := &a.Rows[i]; r.Outcome != nil {
			ran = append(ran, r)
			h.Write([]byte(r.Outcome.Hash + "\n"))
		}
	}
	id := "ablation-" + hex.EncodeToString(h.Sum(nil))[:16]
	rows := make([]sweep.Row, len(ran))
	step, key := make([]string, len(ran)), make([]string, len(ran))
	order := make([]int64, len(ran))
	for i, r := range ran {
		o := r.Outcome
		rows[i] = sweep.Row{PointID: o.Hash, PointIndex: r.Order - 1, SweepID: id, LessimVersion: version,
			RunHash: o.Hash, Spec: o.Spec, Result: o.Result}
		step[i], key[i], order[i] = r.Step.Label, r.Step.Key, int64(r.Order)
	}
	return rows, []sweep.Extra{{Name: ColStep, Strings: step}, {Name: ColOrder, Ints: order}, {Name: ColKey, Strings: key}}
}

// WriteResults writes the ablation's rows (ResultRows) to dir/ablation.parquet
// atomically, creating dir, and returns the file's path. `lessim report dir`
// then draws the ablation bars from it (and any other results in dir).
func WriteResults(dir string, a *Ablation, version string) (string, error) {
	rows, extra := ResultRows(a, version)
	if len(rows) == 0 {
		return "", fmt.Errorf("ablation: no step ran, nothing to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results folder: %w", err)
	}
	path := filepath.Join(dir, ResultsFile)
	if err := sweep.WriteRows(path, rows[0].SweepID, rows, extra...); err != nil {
		return "", err
	}
	return path, nil
}
