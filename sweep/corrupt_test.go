package sweep

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/internal/pqsafe"
	"github.com/lessim/lessim/reports"
)

// corruptPart runs testGrid into a new folder and overwrites its one part's
// bytes with edit's result; it returns the folder and the part.
func corruptPart(t *testing.T, edit func([]byte)) (dir, part string) {
	t.Helper()
	dir = t.TempDir()
	runGrid(t, testGrid, dir, Options{})
	parts, err := Parts(dir)
	if err != nil || len(parts) != 1 {
		t.Fatalf("parts %v, err %v", parts, err)
	}
	data, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	edit(data)
	if err := os.WriteFile(parts[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, parts[0]
}

// TestCorruptPagesRefusedOnResume: a part whose data pages are corrupt is
// neither counted as finished by a resumed sweep nor read by a report; both
// name the file, and the resume says to delete it.
func TestCorruptPagesRefusedOnResume(t *testing.T) {
	dir, part := corruptPart(t, func(b []byte) {
		mid := len(b) / 8
		for i := mid; i < mid+256; i++ {
			b[i] ^= 0x5a
		}
	})
	g, pts := mustExpand(t, testGrid)
	// arrow-go's own words depend on which page header the bytes hit.
	_, err := Run(context.Background(), g.Name, pts, Options{Out: dir, Version: "test"})
	if !errors.Is(err, pqsafe.ErrCorrupt) || !strings.HasPrefix(err.Error(), part+": ") {
		t.Errorf("resume: %v, want the part found corrupt", err)
	}
	_, err = reports.ReadResults(dir)
	if !errors.Is(err, pqsafe.ErrCorrupt) || !strings.HasPrefix(err.Error(), part+": ") {
		t.Errorf("report: %v, want the part found corrupt", err)
	}
}

// TestCorruptStoredSchemaIsHarmless: the footer's stored Arrow schema
// (ARROW:schema, a base64 flatbuffer) with one vector length corrupted
// where it made arrow-go allocate 146 GB and die (found by corrupting the
// footer byte by byte) is ignored: the schema is redundant. The length is
// the empty children vector of the column before depth_penalty's field,
// 16 bytes before that column's name; it becomes 0xF0010000.
func TestCorruptStoredSchemaIsHarmless(t *testing.T) {
	dir, _ := corruptPart(t, func(b []byte) {
		i := bytes.Index(b, []byte("ARROW:schema")) + len("ARROW:schema") + 3
		n := bytes.IndexFunc(b[i:], func(r rune) bool { return !isBase64(r) })
		fb, err := base64.StdEncoding.DecodeString(string(b[i : i+n]))
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(fb, []byte("spec.trace.synthetic.depth_penalty")) - 16
		if at < 0 || binary.LittleEndian.Uint32(fb[at:]) != 0 {
			t.Fatalf("no empty vector 16 bytes before depth_penalty's name in the stored schema (at %d)", at)
		}
		binary.LittleEndian.PutUint32(fb[at:], 0xF0010000)
		base64.StdEncoding.Encode(b[i:i+n], fb)
	})
	tb, err := reports.ReadResults(dir)
	if err != nil || tb.Len() != 12 {
		t.Fatalf("report: %v", err)
	}
	sum := runGrid(t, testGrid, dir, Options{})
	if sum.Skipped != 12 {
		t.Errorf("resume skipped %d points, want 12", sum.Skipped)
	}
}

func isBase64(r rune) bool {
	return r == '+' || r == '/' || r == '=' || '0' <= r && r <= '9' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z'
}

// TestCorruptColumnNameRefused: one changed byte in a column's name in the
// footer's Parquet schema would rename the column (a report would lose
// it); the stored Arrow schema still names it, so both a resumed sweep and
// a report refuse the part.
func TestCorruptColumnNameRefused(t *testing.T) {
	dir, _ := corruptPart(t, func(b []byte) {
		footer := len(b) - 8 - int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		i := bytes.Index(b[footer:], []byte("hit_rate"))
		if i < 0 {
			t.Fatal("no hit_rate column name in the footer")
		}
		b[footer+i] = 'H'
	})
	g, pts := mustExpand(t, testGrid)
	_, err := Run(context.Background(), g.Name, pts, Options{Out: dir, Version: "test"})
	errgolden.Check(t, "resume", err)
	errgolden.Check(t, "report", errgolden.Err(reports.ReadResults(dir)))
}

// TestNullListElementRefused: a part whose list column holds a null
// element (lessim writes none; another writer, or a damaged file, may) is
// neither counted as finished by a resumed sweep nor read by a report:
// both name the file, the row and the element.
func TestNullListElementRefused(t *testing.T) {
	dir := t.TempDir()
	sum := runGrid(t, testGrid, dir, Options{})
	parts, err := Parts(dir)
	if err != nil || len(parts) != 1 {
		t.Fatalf("parts %v, err %v", parts, err)
	}
	rows, err := readPart(parts[0], sum.SweepID)
	if err != nil {
		t.Fatal(err)
	}
	// The part again, in the results schema, with its point ids and one
	// null element in row 2's warnings.
	var js []map[string]any
	for i, r := range rows {
		row := map[string]any{"point_id": r.id, "error": r.err}
		if i == 2 {
			row["warnings"] = []any{"a warning", nil}
		}
		js = append(js, row)
	}
	sc := rowSchema(sum.SweepID, nil)
	data, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parts[0], buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, pts := mustExpand(t, testGrid)
	_, err = Run(context.Background(), g.Name, pts, Options{Out: dir, Version: "test"})
	errgolden.Check(t, "resume", err)
	errgolden.Check(t, "report", errgolden.Err(reports.ReadResults(dir)))
}
