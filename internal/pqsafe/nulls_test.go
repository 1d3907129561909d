package pqsafe

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// listFile is a Parquet file, written by arrow-go's writer, of one list
// column "l" of type typ whose rows are the JSON values in rows ("null", a
// JSON list). A null element of a list whose elements are not nullable
// (arrow.ListOfNonNullable) is written anyway, as another writer might.
func listFile(t *testing.T, typ arrow.DataType, rows ...string) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "l", Type: typ, Nullable: true}}, nil)
	js := "[" + `{"l": ` + strings.Join(rows, `}, {"l": `) + "}]"
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(js))
	if err != nil {
		t.Fatalf("building record: %v", err)
	}
	defer rec.Release()
	// NB: small pages and row groups, so that levels are read across them.
	return writeRecord(t, rec, parquet.NewWriterProperties(parquet.WithDataPageSize(64), parquet.WithMaxRowGroupLength(3)))
}

// readListFile reads data whole through Open and ReadTable.
func readListFile(data []byte) error {
	pf, err := Open(bytes.NewReader(data), "r.parquet")
	if err != nil {
		return err
	}
	defer pf.Close()
	tbl, err := ReadTable(pf, "r.parquet", 2)
	if err != nil {
		return err
	}
	tbl.Release()
	return nil
}

// TestReadTableRefusesNullListElements: a results file's list column with
// a null element is refused, naming the file, the row and the element,
// whether or not the Parquet schema lets elements be null. Where it does
// not, arrow-go reads the null as a missing value: a null first element
// makes the list one shorter, a later one shifts every later value of the
// chunk, and either way nothing in the table shows it.
func TestReadTableRefusesNullListElements(t *testing.T) {
	const why = " is null (lessim writes no null list elements: a damaged file or another tool's)"
	f64, i64, str := arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	for _, c := range []struct {
		name string
		typ  arrow.DataType
		rows []string
		want string // "" for a good file
	}{
		{"good", arrow.ListOf(f64), []string{"[1, 2]", "null", "[]", "[3]", "[4, 5, 6]"}, ""},
		{"good required elements", arrow.ListOfNonNullable(f64), []string{"[1, 2]", "null", "[]", "[3]"}, ""},
		{"later element", arrow.ListOf(f64), []string{"[1, 2]", "null", "[]", "[3, null, 4]"}, "r.parquet: row 3: l[1]" + why},
		{"first element", arrow.ListOf(i64), []string{"[1, 2]", "[]", "[]", "[null, 4]"}, "r.parquet: row 3: l[0]" + why},
		{"only element", arrow.ListOf(str), []string{`["a"]`, "[]", "[]", "[]", "[null]"}, "r.parquet: row 4: l[0]" + why},
		{"later required element", arrow.ListOfNonNullable(f64), []string{"[1, 2]", "[3, 4]", "[]", "[5, null, 6]", "[7]"}, "r.parquet: row 3: l[1]" + why},
		{"first required element", arrow.ListOfNonNullable(str), []string{`["a"]`, "[]", "[]", `[null, "b"]`}, "r.parquet: row 3: l[0]" + why},
		{"first required int element", arrow.ListOfNonNullable(i64), []string{"[1]", "[2]", "[3]", "[4]", "[null, 5]"}, "r.parquet: row 4: l[0]" + why},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := readListFile(listFile(t, c.typ, c.rows...))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("good file refused: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Fatalf("error\n got %v\nwant %s", err, c.want)
			}
		})
	}
}
