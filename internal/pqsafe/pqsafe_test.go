package pqsafe

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// smallFile is a Parquet file of one int64 column and three rows.
func smallFile(t *testing.T) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	rb.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := rb.NewRecordBatch()
	defer rec.Release()
	return writeRecord(t, rec, parquet.NewWriterProperties())
}

// writeRecord writes rec as a Parquet file with props, storing the Arrow
// schema as lessim's results files do.
func writeRecord(t *testing.T, rec arrow.RecordBatch, props *parquet.WriterProperties) []byte {
	t.Helper()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCheckLayoutRefusesImpossibleChunks: a footer whose column chunk lies
// outside the file, or whose row counts disagree, is refused before a page
// is read (arrow-go would allocate the claimed size).
func TestCheckLayoutRefusesImpossibleChunks(t *testing.T) {
	data := smallFile(t)
	for _, c := range []struct {
		name, want string
		edit       func(md *file.Reader)
	}{
		{"huge chunk", "compressed bytes", func(r *file.Reader) {
			r.MetaData().FileMetaData.RowGroups[0].Columns[0].MetaData.TotalCompressedSize = 146 << 30
		}},
		{"offset past the data", "outside the data", func(r *file.Reader) {
			r.MetaData().FileMetaData.RowGroups[0].Columns[0].MetaData.DataPageOffset = int64(len(data))
		}},
		{"negative rows", "rows", func(r *file.Reader) { r.MetaData().FileMetaData.RowGroups[0].NumRows = -1 }},
		{"rows disagree", "the footer says 99", func(r *file.Reader) { r.MetaData().FileMetaData.NumRows = 99 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			pf, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckLayout(pf.MetaData(), int64(len(data))); err != nil {
				t.Fatalf("the good file: %v", err)
			}
			c.edit(pf)
			if err := CheckLayout(pf.MetaData(), int64(len(data))); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestOpenDropsStoredArrowSchema: a garbled ARROW:schema (a flatbuffer that
// arrow-go decodes without bounds checks) is not decoded.
func TestOpenDropsStoredArrowSchema(t *testing.T) {
	data := smallFile(t)
	i := bytes.Index(data, []byte(arrowSchemaKey))
	if i < 0 {
		t.Fatal("no stored schema")
	}
	for j := i + len(arrowSchemaKey) + 4; j < i+len(arrowSchemaKey)+40; j++ {
		data[j] = 'f'
	}
	pf, err := Open(bytes.NewReader(data), "x.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("reading the schema: %v", err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil || tbl.NumRows() != 3 {
		t.Fatalf("rows %v, err %v", tbl, err)
	}
	tbl.Release()
}

func TestCorruptHidesRuntimeErrors(t *testing.T) {
	err := Corrupt("p.parquet", errString("panic while reading: runtime error: invalid memory address or nil pointer dereference"))
	if got := err.Error(); got != "p.parquet: corrupt Parquet file: unreadable data (the Parquet reader failed on it)" {
		t.Errorf("got %q", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
