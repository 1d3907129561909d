package reports_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sweep"
)

// TestRowTableSmallCache: the row table's cache column prints sizes as
// lessim does elsewhere (sim.FormatBytes), so a cache of a few MiB reads
// "4.00 MiB", not "0 GiB".
func TestRowTableSmallCache(t *testing.T) {
	dir := t.TempDir()
	writeRows(t, filepath.Join(dir, "rows.parquet"),
		map[string][]string{"source": {"simulated", "simulated"}, "error": {"", ""}},
		map[string][]float64{"point_index": {0, 1}, "cache_bytes": {4 << 20, 3 << 30}, "tokens_per_sec": {1, 2}})
	tb, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, body := reports.RowTable(tb)
	c := slices.Index(head, "cache")
	if c < 0 || len(body) != 2 {
		t.Fatalf("head %q, %d rows", head, len(body))
	}
	if body[0][c] != "4.00 MiB" || body[1][c] != "3.00 GiB" {
		t.Errorf("cache cells %q and %q, want 4.00 MiB and 3.00 GiB", body[0][c], body[1][c])
	}
}

// TestReportRefusesTwoSweeps: a folder holding the parts of two different
// sweeps (copied together) is refused with both sweep ids and row counts,
// not reported as one table whose point numbers repeat.
func TestReportRefusesTwoSweeps(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	runSweep(t, reportGrid, a, false)
	runSweep(t, strings.Replace(reportGrid, "[1GiB, 2GiB]", "[3GiB]", 1), b, false)
	parts, err := sweep.Parts(b)
	if err != nil || len(parts) == 0 {
		t.Fatal(parts, err)
	}
	for _, p := range parts {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// NB: renamed: both sweeps' first part has the same name.
		if err := os.WriteFile(filepath.Join(a, "b-"+filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = reports.ReadResults(a)
	errgolden.Check(t, "two sweeps", err)
}
