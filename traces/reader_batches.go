package traces

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// pqBatches reads a trace's record batches column by column, as arrow-go's
// pqarrow record reader does (serially, one NextBatch per column), and also
// keeps, per column, how many Parquet levels the batch held: the one number
// that shows a null first list element (pqList.levelsOK), which the arrow
// arrays alone cannot. Next, RecordBatch and Err as in pqarrow.RecordReader.
type pqBatches struct {
	cols   []*pqarrow.ColumnReader
	sc     *arrow.Schema
	size   int64
	cur    arrow.RecordBatch
	levels []int // per column, the current batch's Parquet levels
	err    error
}

// newPQBatches reads the Parquet leaf columns leaves of fr, size rows a batch.
func newPQBatches(fr *pqarrow.FileReader, leaves []int, size int64) (*pqBatches, error) {
	// NB: nil row groups would read none here (GetRecordReader, not
	// GetFieldReaders, turns nil into all).
	groups := make([]int, fr.ParquetReader().NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	cols, sc, err := fr.GetFieldReaders(context.Background(), leaves, groups)
	if err != nil {
		return nil, err
	}
	return &pqBatches{cols: cols, sc: sc, size: size, levels: make([]int, len(cols))}, nil
}

// Next decodes the next batch; false at the end or on an error (Err).
func (b *pqBatches) Next() bool {
	if b.cur != nil {
		b.cur.Release()
		b.cur = nil
	}
	if b.err != nil {
		return false
	}
	arrs := make([]arrow.Array, len(b.cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range b.cols {
		ch, err := c.NextBatch(b.size)
		if err != nil {
			b.err = err
			return false
		}
		if ch.Len() == 0 {
			ch.Release()
			b.err = io.EOF
			return false
		}
		// NB: GetDefLevels is promoted from pqarrow's column reader
		// implementation: the levels NextBatch just decoded, valid until the
		// column's next NextBatch. Only their number is kept.
		def, err := c.GetDefLevels()
		if err != nil {
			ch.Release()
			b.err = err
			return false
		}
		b.levels[i] = len(def)
		arrs[i], err = pqSingle(ch)
		ch.Release()
		if err != nil {
			b.err = err
			return false
		}
	}
	b.cur = array.NewRecordBatch(b.sc, arrs, -1)
	return true
}

// pqSingle is ch as one array (its own reference).
func pqSingle(ch *arrow.Chunked) (arrow.Array, error) {
	if len(ch.Chunks()) == 1 {
		a := ch.Chunk(0)
		a.Retain()
		return a, nil
	}
	return array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
}

// RecordBatch is the batch the last Next decoded, valid until the next Next.
func (b *pqBatches) RecordBatch() arrow.RecordBatch { return b.cur }

// Levels is, per column of RecordBatch, the number of Parquet levels it was
// decoded from. The slice is overwritten by the next Next.
func (b *pqBatches) Levels() []int { return b.levels }

// Err is the error that ended Next, nil at the end of the file.
func (b *pqBatches) Err() error {
	if b.err == io.EOF {
		return nil
	}
	return b.err
}

// Release releases the current batch and the column readers.
func (b *pqBatches) Release() {
	if b.cur != nil {
		b.cur.Release()
		b.cur = nil
	}
	for _, c := range b.cols {
		c.Release()
	}
	b.cols = nil
}
