package reports_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/lessim/lessim/reports"
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
