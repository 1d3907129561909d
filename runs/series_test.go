package runs

import (
	"bytes"
	"github.com/lessim/lessim/internal/errgolden"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeSeries writes int64 columns as a Parquet file, as `lessim live
// --series` does (runtime/live.WriteSeries, which needs the cgo build).
func writeSeries(t *testing.T, cols map[string][]int64, order []string) string {
	t.Helper()
	var fields []arrow.Field
	for _, n := range order {
		fields = append(fields, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int64})
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, n := range order {
		b.Field(i).(*array.Int64Builder).AppendValues(cols[n], nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "series.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// NB: with the Arrow schema stored, as pqarrow writers may (lessim's
	// results parts do), so the garbled-schema test has one to garble.
	w, err := pqarrow.NewFileWriter(sc, f, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadLiveSeries(t *testing.T) {
	order := []string{"token", "wall_ns", "stall_ns", "compute_ns", "bytes_read", "reads", "hits", "major_faults"}
	cols := map[string][]int64{
		"token": {0, 1, 2}, "wall_ns": {100e3, 200e3, 300e3}, "stall_ns": {10e3, 20e3, 30e3}, "compute_ns": {90e3, 180e3, 270e3},
		"bytes_read": {1 << 20, 0, 2 << 20}, "reads": {1, 0, 2}, "hits": {8, 8, 8}, "major_faults": {0, 1, 0},
	}
	run, err := Read(writeSeries(t, cols, order), "lessim-live-series")
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Tokens) != 3 || run.Tokens[2].WallNS != 300e3 || run.Tokens[2].ReadBytes != 2<<20 || run.Tokens[1].MajorFaults != 1 || run.Tokens[0].Step != 1 {
		t.Fatalf("tokens %+v", run.Tokens)
	}
	if run.Has(FieldMgmt) || !run.Has(FieldStall) || !run.Has(FieldRead) || run.Tokens[0].MgmtNS != -1 {
		t.Fatalf("fields %v, mgmt %d", run.Fields, run.Tokens[0].MgmtNS)
	}
	if run.MeanWallNS() != 200e3 {
		t.Fatalf("mean wall %g", run.MeanWallNS())
	}
}

func TestReadLiveSeriesErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cols  map[string][]int64
		order []string
		want  string
	}{
		{"no token", map[string][]int64{"wall_ns": {1}}, []string{"wall_ns"}, "no token column"},
		{"no wall", map[string][]int64{"token": {0}}, []string{"token"}, "no wall_ns column"},
		{"gap", map[string][]int64{"token": {0, 2}, "wall_ns": {1e6, 1e6}}, []string{"token", "wall_ns"}, "row 2: token 2, want 1"},
		{"negative", map[string][]int64{"token": {0}, "wall_ns": {5}, "stall_ns": {-1}}, []string{"token", "wall_ns", "stall_ns"}, "row 1: stall_ns is -1"},
		{"zero wall", map[string][]int64{"token": {0}, "wall_ns": {0}}, []string{"token", "wall_ns"}, "row 1: wall_ns is 0"},
		{"1 ns per token", map[string][]int64{"token": {0, 1}, "wall_ns": {5e6, 1}}, []string{"token", "wall_ns"}, "row 2: wall_ns is 1"},
	} {
		_, err := ReadLiveSeries(writeSeries(t, tc.cols, tc.order))
		errgolden.Check(t, tc.name, err)
	}
	bad := filepath.Join(t.TempDir(), "x.parquet")
	os.WriteFile(bad, []byte("not parquet"), 0o644)
	errgolden.Check(t, "garbage", errgolden.Err(ReadLiveSeries(bad)))
}

// TestReadLiveSeriesGarbledArrowSchema: a series whose stored Arrow schema
// (a flatbuffer arrow-go decodes without bounds checks) is garbled still
// reads, from the Parquet schema: the footer goes through pqsafe, as for
// traces and results, instead of straight to arrow-go.
func TestReadLiveSeriesGarbledArrowSchema(t *testing.T) {
	path := writeSeries(t, map[string][]int64{"token": {0, 1}, "wall_ns": {5e6, 6e6}}, []string{"token", "wall_ns"})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("ARROW:schema"))
	if i < 0 {
		t.Fatal("the series stores no Arrow schema")
	}
	for j := i + len("ARROW:schema") + 4; j < i+len("ARROW:schema")+40; j++ {
		data[j] = 'f'
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := ReadLiveSeries(path)
	if err != nil || len(run.Tokens) != 2 {
		t.Fatalf("run %v, err %v", run, err)
	}
}
