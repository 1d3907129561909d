package pqsafe

import (
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// levelBatch is how many levels FindNullElement reads at a time.
const levelBatch = 1 << 14

// NullElement is a null element of a list column, found in the file's
// Parquet levels: Row is the file row (counting from 0, as in traces), Index
// the element's position in that row's list.
type NullElement struct {
	Row   int64
	Index int
}

// FindNullElement finds the first null element of pf's leaf column leaf, a
// list of scalars (other leaves have none), from its levels: arrow-go reads
// one as a missing value, so the Arrow arrays cannot show it. err is set
// when the levels cannot be read. NB: a list whose only element is null has
// the levels of an empty list; no reader can tell them apart.
func FindNullElement(pf *file.Reader, leaf int) (ne NullElement, found bool, err error) {
	// NB: last resort only: the levels of a corrupt file may make arrow-go
	// panic; that is "cannot be read".
	defer func() {
		if recover() != nil {
			ne, found, err = NullElement{}, false, fmt.Errorf("unreadable levels (the Parquet reader failed on them)")
		}
	}()
	col := pf.MetaData().Schema.Column(leaf)
	if col.MaxRepetitionLevel() != 1 {
		return NullElement{}, false, nil
	}
	s := nullScan{maxDef: col.MaxDefinitionLevel(), entryDef: entryDefLevel(col), row: -1}
	for g := range pf.NumRowGroups() {
		cr, err := pf.RowGroup(g).Column(leaf)
		if err != nil {
			return NullElement{}, false, err
		}
		read := levelReader(cr)
		if read == nil {
			return NullElement{}, false, fmt.Errorf("column %s: unsupported physical type %s", col.Path(), cr.Type())
		}
		for {
			def, rep, err := read()
			if err != nil {
				return NullElement{}, false, err
			}
			if len(def) == 0 {
				break
			}
			if s.scan(def, rep) {
				return s.null, true, nil
			}
		}
	}
	return NullElement{}, false, nil
}

// CheckListElements refuses pf (named name in errors) when one of its list
// columns holds a null element (FindNullElement), which lessim never writes.
func CheckListElements(pf *file.Reader, name string) error {
	sc := pf.MetaData().Schema
	for leaf := range sc.NumColumns() {
		ne, found, err := FindNullElement(pf, leaf)
		col := sc.Column(leaf).ColumnPath()[0]
		switch {
		case err != nil:
			return fmt.Errorf("%s: corrupt Parquet file: column %s: %w", name, col, err)
		case found:
			return fmt.Errorf("%s: row %d: %s[%d] is null (lessim writes no null list elements: a damaged file or another tool's)", name, ne.Row, col, ne.Index)
		}
	}
	return nil
}

// entryDefLevel is the definition level at which col's leaf has an entry
// in its list: the maximum less one per optional node below the repeated
// one. A level from it to below the maximum is a null element.
func entryDefLevel(col *schema.Column) int16 {
	def := col.MaxDefinitionLevel()
	for n := col.SchemaNode(); n != nil; n = n.Parent() {
		switch n.RepetitionType() {
		case parquet.Repetitions.Repeated:
			return def
		case parquet.Repetitions.Optional:
			def--
		}
	}
	return col.MaxDefinitionLevel()
}

// nullScan walks a list column's levels across batches (FindNullElement).
type nullScan struct {
	maxDef   int16
	entryDef int16       // entryDefLevel
	row      int64       // current row
	elem     int         // index of the current entry in its row's list
	pendLow  bool        // the current row's first entry is below entryDef
	null     NullElement // what scan found
}

// scan consumes one batch of levels; it reports whether a null element was
// found (s.null). An entry below maxDef is a null element when it is at or
// above entryDef (the element is there, its value is not), when it continues
// a list, or when a list continues after it: only a lone entry below
// entryDef is a whole empty or null list.
func (s *nullScan) scan(def, rep []int16) bool {
	for i := range def {
		if rep[i] == 0 {
			s.row++
			s.elem = 0
			s.pendLow = def[i] < s.entryDef
			if !s.pendLow && def[i] < s.maxDef {
				s.null = NullElement{Row: s.row, Index: 0}
				return true
			}
			continue
		}
		s.elem++
		switch {
		case s.pendLow: // a list continues after a low first entry: it was a null element
			s.null = NullElement{Row: s.row, Index: 0}
			return true
		case def[i] < s.maxDef:
			s.null = NullElement{Row: s.row, Index: s.elem}
			return true
		}
	}
	return false
}

// batchReader is arrow-go's typed column chunk reader (ReadBatch alone).
type batchReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
}

// levels returns a function reading r's next levels (the values are dropped).
func levels[T any](r batchReader[T]) func() (def, rep []int16, err error) {
	vals := make([]T, levelBatch)
	def, rep := make([]int16, levelBatch), make([]int16, levelBatch)
	return func() ([]int16, []int16, error) {
		n, _, err := r.ReadBatch(levelBatch, vals, def, rep)
		return def[:n], rep[:n], err
	}
}

// levelReader is levels of cr, or nil for an unknown reader type.
func levelReader(cr file.ColumnChunkReader) func() (def, rep []int16, err error) {
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		return levels[bool](r)
	case *file.Int32ColumnChunkReader:
		return levels[int32](r)
	case *file.Int64ColumnChunkReader:
		return levels[int64](r)
	case *file.Int96ColumnChunkReader:
		return levels[parquet.Int96](r)
	case *file.Float32ColumnChunkReader:
		return levels[float32](r)
	case *file.Float64ColumnChunkReader:
		return levels[float64](r)
	case *file.ByteArrayColumnChunkReader:
		return levels[parquet.ByteArray](r)
	case *file.FixedLenByteArrayColumnChunkReader:
		return levels[parquet.FixedLenByteArray](r)
	}
	return nil
}
