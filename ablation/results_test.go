package ablation

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lessim/lessim/reports"
)

// TestResultsFeedTheReport writes an ablation's Parquet rows and reads them
// back as a report does: one row per step that ran, in step order, with its
// label, order, spec fields and metrics; the report draws the ablation bars
// from them.
func TestResultsFeedTheReport(t *testing.T) {
	a := mustRun(t, small(nil))
	dir := filepath.Join(t.TempDir(), "results")
	path, err := WriteResults(dir, a, "test")
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, ResultsFile) {
		t.Fatalf("wrote %s", path)
	}
	tb, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ran []Row
	for _, r := range a.Rows {
		if r.Outcome != nil {
			ran = append(ran, r)
		}
	}
	if len(ran) < 5 || tb.Len() != len(ran) {
		t.Fatalf("%d rows read, %d steps ran", tb.Len(), len(ran))
	}
	for i, r := range ran {
		if got := tb.Str(ColStep, i); got != r.Step.Label {
			t.Errorf("row %d: %s = %q, want %q", i, ColStep, got, r.Step.Label)
		}
		if got := tb.Str(ColKey, i); got != r.Step.Key {
			t.Errorf("row %d: %s = %q, want %q", i, ColKey, got, r.Step.Key)
		}
		if got, _ := tb.Num(ColOrder, i); got != float64(r.Order) {
			t.Errorf("row %d: %s = %v, want %d", i, ColOrder, got, r.Order)
		}
		if got, _ := tb.Num("tokens_per_sec", i); got != r.Outcome.Result.TokensPerSec {
			t.Errorf("row %d: tokens_per_sec %v, want %v", i, got, r.Outcome.Result.TokensPerSec)
		}
		if got := tb.Str("spec.policy.name", i); got != r.Outcome.Spec.Policy.Name {
			t.Errorf("row %d: spec.policy.name %q, want %q", i, got, r.Outcome.Spec.Policy.Name)
		}
		if got := tb.Str("run_hash", i); got != r.Outcome.Hash {
			t.Errorf("row %d: run_hash %q, want %q", i, got, r.Outcome.Hash)
		}
	}
	rep, err := reports.WriteReport(tb, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Drawn, "ablation") {
		t.Fatalf("report drew %v, skipped %v: no ablation bars", rep.Drawn, rep.Skipped)
	}
}

// TestResultsAreDeterministic: the same ablation writes the same bytes.
func TestResultsAreDeterministic(t *testing.T) {
	s := small(map[string]string{"tokens": "40"})
	var files [2][]byte
	for i := range files {
		dir := t.TempDir()
		path, err := WriteResults(dir, mustRun(t, s), "test")
		if err != nil {
			t.Fatal(err)
		}
		if files[i], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if string(files[0]) != string(files[1]) {
		t.Fatal("two runs of one ablation wrote different results files")
	}
}
