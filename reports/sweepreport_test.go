package reports_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sweep"
)

// reportGrid is 2 policies × 2 thresholds × 2 caches (lru collapses: 6 points).
const reportGrid = `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 24}}
axes:
  policy.name: [lru, les]
  policy.les.threshold: [0.5, 0.9]
  cache.size: [1GiB, 2GiB]
`

// runSweep runs a grid into dir and returns its points.
func runSweep(t testing.TB, src, dir string, keepSeries bool) []sweep.Point {
	t.Helper()
	g, err := sweep.ParseGrid([]byte(src), "report.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.Run(context.Background(), g.Name, pts, sweep.Options{Out: dir, Version: "test", KeepSeries: keepSeries}); err != nil {
		t.Fatal(err)
	}
	return pts
}

// writeRows writes a small Parquet file of string and float columns, as a
// measurement tool or an ablation would.
func writeRows(t testing.TB, path string, strs map[string][]string, nums map[string][]float64) {
	t.Helper()
	var fields []arrow.Field
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range strs {
			if !yield(k) {
				return
			}
		}
		for k := range nums {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range names {
		typ := arrow.DataType(arrow.PrimitiveTypes.Float64)
		if _, ok := strs[n]; ok {
			typ = arrow.BinaryTypes.String
		}
		fields = append(fields, arrow.Field{Name: n, Type: typ, Nullable: true})
	}
	sc := arrow.NewSchema(fields, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for c, n := range names {
		if v, ok := strs[n]; ok {
			rb.Field(c).(*array.StringBuilder).AppendValues(v, nil)
		} else {
			rb.Field(c).(*array.Float64Builder).AppendValues(nums[n], nil)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fullResults is a sweep folder plus measured rows and ablation rows, so
// that every plot can be drawn.
func fullResults(t *testing.T) string {
	dir := t.TempDir()
	pts := runSweep(t, reportGrid, dir, false)
	tb, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids, src []string
	var tps []float64
	for i := range 3 {
		v, _ := tb.Num("tokens_per_sec", i)
		ids, src, tps = append(ids, tb.Str("point_id", i)), append(src, "measured"), append(tps, v*0.9)
	}
	writeRows(t, filepath.Join(dir, "measured.parquet"), map[string][]string{"point_id": ids, "source": src}, map[string][]float64{"tokens_per_sec": tps})
	writeRows(t, filepath.Join(dir, "ablation.parquet"),
		map[string][]string{"ablation_step": {"+ lookahead", "stock", "+ storage"}, "source": {"simulated", "simulated", "simulated"}},
		map[string][]float64{"ablation_order": {2, 1, 3}, "tokens_per_sec": {4, 2, 7}})
	if len(pts) != 6 {
		t.Fatalf("%d points", len(pts))
	}
	return dir
}

func TestReportDrawsEveryPlotItCan(t *testing.T) {
	dir := fullResults(t)
	tb, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Len() != 6+3+3 || len(tb.Files) != 3 {
		t.Fatalf("%d rows from %d files", tb.Len(), len(tb.Files))
	}
	out := t.TempDir()
	rep, err := reports.WriteReport(tb, dir, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"throughput", "heatmap", "hit-rate", "latency-cdf", "stall-breakdown", "ablation", "predicted-vs-measured"}
	if !slices.Equal(rep.Drawn, want) || len(rep.Skipped) != 0 {
		t.Fatalf("drawn %v, skipped %v", rep.Drawn, rep.Skipped)
	}
	if rep.Simulated != 9 || rep.Measured != 3 {
		t.Errorf("report counts %+v", rep)
	}
	for _, n := range want {
		for _, ext := range []string{".png", ".svg"} {
			if st, err := os.Stat(filepath.Join(out, n+ext)); err != nil || st.Size() < 2000 {
				t.Errorf("%s%s: %v", n, ext, err)
			}
		}
	}
	page, err := os.ReadFile(filepath.Join(out, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	imgs := regexp.MustCompile(`<img src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"`).FindAll(page, -1)
	if len(imgs) != len(want) {
		t.Errorf("report.html embeds %d images, want %d", len(imgs), len(want))
	}
	// The same table gives the same bytes.
	out2 := t.TempDir()
	if _, err := reports.WriteReport(tb, dir, out2); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{reports.ReportFile, "heatmap.png", "throughput.svg"} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(out2, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two renderings", f)
		}
	}
}

func TestReportSaysWhatItSkips(t *testing.T) {
	dir := t.TempDir()
	runSweep(t, `base:
  trace: {synthetic: {tokens: 24}}
  cache: {size: 2GiB}
axes:
  policy.name: [lru, lfu]
`, dir, true)
	tb, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rep, err := reports.WriteReport(tb, dir, out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Drawn, []string{"latency-cdf", "stall-breakdown"}) {
		t.Errorf("drawn %v", rep.Drawn)
	}
	page, _ := os.ReadFile(filepath.Join(out, reports.ReportFile))
	for _, want := range []string{"the cache size does not vary", "no measured rows", "no row carries an ablation step label",
		"from each run&#39;s per-pass series"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html does not say %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "throughput.png")); err == nil {
		t.Error("throughput.png drawn though the cache does not vary")
	}
}

func TestReadResultsErrors(t *testing.T) {
	dir := t.TempDir()
	errgolden.Check(t, "no-results", errgolden.Err(reports.ReadResults(dir)))
	os.WriteFile(filepath.Join(dir, "x.parquet"), []byte("not parquet"), 0o644)
	errgolden.Check(t, "x-parquet", errgolden.Err(reports.ReadResults(dir)))
}
