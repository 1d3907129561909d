package traces

import "github.com/apache/arrow-go/v18/parquet/file"

// pqLevelBatch is how many levels pqFindNullElement reads at a time.
const pqLevelBatch = 1 << 14

// pqFindNullElement finds the first null element of the list column col in
// the file, from its Parquet repetition and definition levels: an entry
// below the column's full definition level that is not a whole empty or
// null list (it continues a list, or a list continues after it). It returns
// the file row and the element's index in that row's list; ok is false when
// the levels show no such element (or cannot be read). It is only called
// once a batch is known to be corrupt (pqList.short, pqList.levelsOK), so its
// cost (one more pass over the column) does not matter.
func pqFindNullElement(pf *file.Reader, col string) (row int64, elem int, ok bool) {
	// NB: the file is known to be corrupt; a panic inside arrow-go decoding
	// its levels means "cannot be read", and the caller reports the batch's
	// own inconsistency instead.
	defer func() {
		if recover() != nil {
			row, elem, ok = 0, 0, false
		}
	}()
	leaf := -1
	sc := pf.MetaData().Schema
	for i := range sc.NumColumns() {
		if p := sc.Column(i).ColumnPath(); len(p) > 0 && p[0] == col {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return 0, 0, false
	}
	maxDef := sc.Column(leaf).MaxDefinitionLevel()
	s := pqNullScan{maxDef: maxDef, row: -1}
	for g := range pf.NumRowGroups() {
		cr, err := pf.RowGroup(g).Column(leaf)
		if err != nil {
			return 0, 0, false
		}
		read := pqLevelReader(cr)
		if read == nil {
			return 0, 0, false
		}
		for {
			def, rep, err := read()
			if err != nil || len(def) == 0 {
				break
			}
			if s.scan(def, rep) {
				return s.nullRow, s.nullElem, true
			}
		}
	}
	return 0, 0, false
}

// pqNullScan walks levels across batches (pqFindNullElement).
type pqNullScan struct {
	maxDef   int16
	row      int64 // current row
	elem     int   // index of the current entry in its row's list
	pendLow  bool  // the current row's first entry is below maxDef
	nullRow  int64
	nullElem int
}

// scan consumes one batch of levels; it reports whether a null element was
// found (nullRow, nullElem).
func (s *pqNullScan) scan(def, rep []int16) bool {
	for i := range def {
		if rep[i] == 0 {
			s.row++
			s.elem = 0
			s.pendLow = def[i] < s.maxDef
			continue
		}
		s.elem++
		switch {
		case s.pendLow: // a list continues after a low first entry: it was a null element
			s.nullRow, s.nullElem = s.row, 0
			return true
		case def[i] < s.maxDef:
			s.nullRow, s.nullElem = s.row, s.elem
			return true
		}
	}
	return false
}

// pqLevelReader returns a function that reads the next levels of a list
// column's leaf, or nil for a leaf type no trace list has.
func pqLevelReader(cr file.ColumnChunkReader) func() (def, rep []int16, err error) {
	def, rep := make([]int16, pqLevelBatch), make([]int16, pqLevelBatch)
	var read func() (int64, error)
	switch r := cr.(type) {
	case *file.Int32ColumnChunkReader:
		vals := make([]int32, pqLevelBatch)
		read = func() (int64, error) { n, _, err := r.ReadBatch(pqLevelBatch, vals, def, rep); return n, err }
	case *file.Float32ColumnChunkReader:
		vals := make([]float32, pqLevelBatch)
		read = func() (int64, error) { n, _, err := r.ReadBatch(pqLevelBatch, vals, def, rep); return n, err }
	case *file.BooleanColumnChunkReader:
		vals := make([]bool, pqLevelBatch)
		read = func() (int64, error) { n, _, err := r.ReadBatch(pqLevelBatch, vals, def, rep); return n, err }
	default:
		return nil
	}
	return func() ([]int16, []int16, error) {
		n, err := read()
		return def[:n], rep[:n], err
	}
}
