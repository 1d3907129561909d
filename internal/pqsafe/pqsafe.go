package pqsafe

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// arrowSchemaKey is the metadata key of pqarrow's stored Arrow schema.
const arrowSchemaKey = "ARROW:schema"

// maxChunkBytes bounds a column chunk's uncompressed size (no lessim file
// comes near it).
const maxChunkBytes = 1 << 34

// Open checks src (named name in errors) and returns its Parquet reader,
// which closes src when src has a Close method.
func Open(src parquet.ReaderAtSeeker, name string) (pf *file.Reader, err error) {
	// NB: last resort only: everything below is checked first.
	defer func() {
		if recover() != nil {
			pf, err = nil, Recovered(name)
		}
	}()
	size, err := CheckMagic(src, name)
	if err != nil {
		return nil, err
	}
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	pf, err = file.NewParquetReader(src, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt Parquet footer: %w", name, err)
	}
	if err := CheckLayout(pf.MetaData(), size); err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: corrupt Parquet file: %w", name, err)
	}
	if err := checkStoredNames(pf.MetaData()); err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: corrupt Parquet file: %w", name, err)
	}
	dropArrowSchema(pf.MetaData())
	return pf, nil
}

// CheckMagic tells a non-Parquet file from a truncated one before arrow-go
// sees it and returns the file's size.
func CheckMagic(src parquet.ReaderAtSeeker, name string) (int64, error) {
	size, err := src.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	magic := []byte("PAR1")
	head := make([]byte, 4)
	n, err := src.ReadAt(head, 0)
	if n < 4 {
		if err != nil && err != io.EOF {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		if bytes.HasPrefix(magic, head[:n]) {
			return 0, fmt.Errorf("%s: truncated Parquet file (%d bytes)", name, size)
		}
		return 0, fmt.Errorf("%s: not a Parquet file", name)
	}
	if !bytes.Equal(head, magic) {
		return 0, fmt.Errorf("%s: not a Parquet file", name)
	}
	tail := make([]byte, 8)
	if size < 12 {
		return 0, fmt.Errorf("%s: truncated Parquet file (%d bytes)", name, size)
	}
	if _, err := src.ReadAt(tail, size-8); err != nil && err != io.EOF {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(tail[4:], magic) {
		return 0, fmt.Errorf("%s: truncated Parquet file (no footer; was it closed?)", name)
	}
	if footer := int64(tail[0]) | int64(tail[1])<<8 | int64(tail[2])<<16 | int64(tail[3])<<24; footer+12 > size {
		return 0, fmt.Errorf("%s: truncated Parquet file (footer of %d bytes in a %d-byte file)", name, footer, size)
	}
	return size, nil
}

// CheckLayout checks md, the footer of a file of size bytes, before any
// page is read: row counts add up and every column chunk lies in the data.
func CheckLayout(md *metadata.FileMetaData, size int64) error {
	end := size - 8 - int64(md.Size()) // where the footer starts
	if md.NumRows < 0 {
		return fmt.Errorf("%d rows", md.NumRows)
	}
	var rows int64
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		if rg.NumRows() < 0 || rg.NumColumns() != md.Schema.NumColumns() {
			return fmt.Errorf("row group %d: %d rows, %d columns (the schema has %d)", g, rg.NumRows(), rg.NumColumns(), md.Schema.NumColumns())
		}
		rows += rg.NumRows()
		for c := range rg.NumColumns() {
			if err := checkChunk(rg, c, end); err != nil {
				return fmt.Errorf("row group %d, column %s: %w", g, md.Schema.Column(c).Path(), err)
			}
		}
	}
	if rows != md.NumRows {
		return fmt.Errorf("the row groups hold %d rows, the footer says %d", rows, md.NumRows)
	}
	return nil
}

func checkChunk(rg *metadata.RowGroupMetaData, c int, end int64) error {
	cc, err := rg.ColumnChunk(c)
	if err != nil {
		return err
	}
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() {
		if d := cc.DictionaryPageOffset(); d < start {
			start = d
		}
	}
	comp, raw := cc.TotalCompressedSize(), cc.TotalUncompressedSize()
	switch {
	case cc.NumValues() < 0:
		return fmt.Errorf("%d values", cc.NumValues())
	case start < 4 || cc.DataPageOffset() >= end:
		return fmt.Errorf("pages at offset %d, outside the data (bytes 4 to %d)", start, end)
	case comp < 0 || comp > end-start:
		return fmt.Errorf("%d compressed bytes at offset %d, past the data's end %d", comp, start, end)
	case raw < 0 || raw > maxChunkBytes:
		return fmt.Errorf("%d uncompressed bytes", raw)
	}
	return nil
}

// checkStoredNames checks, when md holds a stored Arrow schema (lessim's
// results files do), that it names every top-level column of the Parquet
// schema: the names are kept twice, so a corrupt byte in one copy is found
// instead of renaming a column (a report would quietly lose it). NB: the
// flatbuffer is not decoded (see dropArrowSchema); a flatbuffer string is
// its length as a little-endian uint32, its bytes and a NUL, so each name is
// looked for in that form.
func checkStoredNames(md *metadata.FileMetaData) error {
	var stored *string
	for _, e := range md.FileMetaData.KeyValueMetadata {
		if e.Key == arrowSchemaKey {
			stored = e.Value
		}
	}
	if stored == nil {
		return nil
	}
	blob, err := base64.StdEncoding.DecodeString(*stored)
	if err != nil {
		return fmt.Errorf("stored Arrow schema (%s) is not base64: %w", arrowSchemaKey, err)
	}
	root := md.Schema.Root()
	for i := range root.NumFields() {
		name := root.Field(i).Name()
		enc := binary.LittleEndian.AppendUint32(nil, uint32(len(name)))
		enc = append(append(enc, name...), 0)
		if !bytes.Contains(blob, enc) {
			return fmt.Errorf("column %q is not in the file's stored Arrow schema (a corrupt column name?)", name)
		}
	}
	return nil
}

// dropArrowSchema removes the stored Arrow schema from md. NB: arrow-go
// decodes it without bounds checks.
func dropArrowSchema(md *metadata.FileMetaData) {
	kv := md.FileMetaData.KeyValueMetadata
	out := kv[:0]
	for _, e := range kv {
		if e.Key != arrowSchemaKey {
			out = append(out, e)
		}
	}
	md.FileMetaData.KeyValueMetadata = out
}

// Recovered is the error for a panic recovered while reading name (its
// text is not shown).
func Recovered(name string) error {
	return fmt.Errorf("%s: %w: unreadable data (the Parquet reader failed on it)", name, ErrCorrupt)
}

// ErrCorrupt is wrapped by every error that finds a file corrupt.
var ErrCorrupt = errors.New("corrupt Parquet file")

// Corrupt wraps err, an error reading name's pages, as a corrupt file
// (Recovered's words for arrow-go's own recovered panic).
func Corrupt(name string, err error) error {
	if msg := err.Error(); strings.Contains(msg, "panic") || strings.Contains(msg, "runtime error") {
		return Recovered(name)
	}
	return fmt.Errorf("%s: %w: %w", name, ErrCorrupt, err)
}
