package validation

import (
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/sweep"
)

// TestRows: the results rows of known points, one simulated and one
// measured per repeat, read back with their point_id and tokens/s.
func TestRows(t *testing.T) {
	res := func(tps float64, source string) *sim.Result {
		return &sim.Result{TokensPerSec: tps, Source: source, Tokens: 8}
	}
	meas := func(tps ...float64) []*sim.Result {
		var out []*sim.Result
		for _, v := range tps {
			out = append(out, res(v, sim.SourceMeasured))
		}
		return out
	}
	pts := []reports.VsPoint{
		{Policy: "lru", Cache: "25%", CacheBytes: 100, Predicted: res(110, sim.SourceSimulated), Measured: meas(90, 110)},
		{Policy: "les", Cache: "25%", CacheBytes: 100, Predicted: res(150, sim.SourceSimulated), Measured: meas(200, 200)},
		{Policy: "lru", Cache: "40%", CacheBytes: 160, Predicted: res(100, sim.SourceSimulated), Measured: meas(125)},
		{Policy: "les", Cache: "40%", CacheBytes: 160, Predicted: res(120, sim.SourceSimulated), Measured: meas(100)},
	}
	specs := make([]experiment.Spec, len(pts))
	for i, p := range pts {
		specs[i] = experiment.Spec{Version: experiment.Version, Trace: experiment.Trace{Path: "t.parquet"},
			Policy: experiment.Policy{Name: p.Policy}, Cache: experiment.Cache{Size: p.Cache}}
	}
	rows, id, err := Rows(pts, specs, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4+6 {
		t.Fatalf("%d rows, want 4 simulated + 6 measured", len(rows))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "results.parquet")
	if err := sweep.WriteRows(path, id, rows); err != nil {
		t.Fatal(err)
	}
	tab, err := reports.ReadTables(path)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 10 {
		t.Fatalf("read back %d rows", tab.Len())
	}
	var measured int
	for i := range tab.Len() {
		if tab.Str("source", i) == sim.SourceMeasured {
			measured++
		}
		if tab.Str("point_id", i) != specs[rows[i].PointIndex].Hash() {
			t.Errorf("row %d point_id %q", i, tab.Str("point_id", i))
		}
		if v, _ := tab.Num("tokens_per_sec", i); v != rows[i].TokensPerSec {
			t.Errorf("row %d tokens/s %g, want %g", i, v, rows[i].TokensPerSec)
		}
	}
	if measured != 6 {
		t.Errorf("%d measured rows read back, want 6", measured)
	}
}
