package reports_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/reports"
)

// FuzzReadTables: no file, however corrupt, makes ReadTables panic (a
// results folder is user input: lessim report reads whatever *.parquet it
// holds); a file it reads gives a rows table of one row per table row.
func FuzzReadTables(f *testing.F) {
	dir := f.TempDir()
	runSweep(f, "base:\n  trace: {synthetic: {tokens: 8}}\naxes:\n  policy.name: [lru, les]\n", dir, false)
	writeRows(f, filepath.Join(dir, "measured.parquet"), map[string][]string{"point_id": {"a", "b"}, "source": {"measured", "measured"}},
		map[string][]float64{"tokens_per_sec": {1.5, 2}})
	seeds, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tb, err := reports.ReadTables(path)
		if err != nil {
			return
		}
		if _, body := reports.RowTable(tb); len(body) != tb.Len() {
			t.Fatalf("%d rows in the table, %d read", len(body), tb.Len())
		}
	})
}
