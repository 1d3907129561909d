package sweep

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"testing"

	pq "github.com/parquet-go/parquet-go"
)

// TestPartsReadByParquetGo reads a results part with parquet-go, an
// independent (not arrow-based) reader: same rows, every column, the format
// and sweep keys, and the point ids.
func TestPartsReadByParquetGo(t *testing.T) {
	dir := t.TempDir()
	sum := runGrid(t, testGrid, dir, Options{})
	parts, err := Parts(dir)
	if err != nil || len(parts) != 1 {
		t.Fatalf("parts %v %v", parts, err)
	}
	data, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 12 {
		t.Errorf("parquet-go counts %d rows, want 12", f.NumRows())
	}
	if v, _ := f.Lookup(FormatKey); v != strconv.Itoa(FormatVersion) {
		t.Errorf("%s = %q", FormatKey, v)
	}
	if v, _ := f.Lookup(SweepKey); v != sum.SweepID {
		t.Errorf("%s = %q, want %s", SweepKey, v, sum.SweepID)
	}
	var top []string
	for _, fld := range f.Schema().Fields() {
		top = append(top, fld.Name())
	}
	if !slices.Equal(top, ColumnNames()) {
		t.Errorf("parquet-go sees columns\n%v\nwant\n%v", top, ColumnNames())
	}
	ids, err := readPart(parts[0], sum.SweepID)
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(top, "point_id")
	leaf, _ := f.Schema().Lookup("point_id")
	r := pq.NewReader(f)
	defer r.Close()
	rows := make([]pq.Row, 12)
	n, _ := r.ReadRows(rows)
	for i, row := range rows[:n] {
		var got string
		row.Range(func(c int, v []pq.Value) bool {
			if c == leaf.ColumnIndex {
				got = v[0].String()
			}
			return true
		})
		if got != ids[i].id {
			t.Errorf("row %d: parquet-go point_id %q, arrow %q (column %d)", i, got, ids[i].id, col)
		}
	}
}
