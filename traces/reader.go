package traces

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lessim/lessim/internal/pqsafe"
)

// Reader streams the steps of a trace file, like bufio.Scanner: call Next
// until it returns false, then check Err. It reads one record batch at a time
// (never the whole file), checks every row as it assembles a step (order,
// layer count, ranges; see Validate) and reports the first problem as
// "file: row N: reason", N counting rows from 0 as DuckDB's file_row_number
// does. A Reader is not safe for concurrent use.
type Reader struct {
	name string
	file *os.File // the file Open opened, closed by Close; nil for NewReader
	meta Meta
	read Meta // meta with the skipped columns marked absent (Columns)
	// noWeights: the gate weights column is skipped (Columns.NoWeights).
	noWeights bool
	pf        *file.Reader
	rr        *pqBatches
	ahead     *readAhead // decodes rr's batches ahead of Next
	steps     int64      // rows / layers, from the footer

	batch   pqBatch // current record batch's columns
	rec     arrow.RecordBatch
	idx     int   // next row in rec
	base    int64 // file row of rec's first row
	step    Step
	bufs    []pqLayerBuf
	checker stepChecker
	err     error
	done    bool
}

// pqLayerBuf holds one layer's reusable buffers; Step slices point into them.
type pqLayerBuf struct {
	experts             []int32
	weights, logits, ri []float32
	look                [][]float32 // per depth
	lookHdr             [][]float32 // what Step.Lookahead points to
	hit                 []bool
	tops                [][]int32 // compact lookahead candidates per depth
	index               []CandidateIndex
	empty               [][]float32 // empty vectors Step.Lookahead holds when compact
	present             []bool      // compact depths present in the current row
}

// Open opens the trace file at path (see NewReader). Close closes the file.
func Open(path string) (*Reader, error) { return OpenColumns(path, Columns{}) }

// pqNoCloseRA hides a reader's Close: file.Reader.Close closes its source when
// it can, and NewReader's caller owns theirs (Open's file is closed by
// Reader.Close, once).
type pqNoCloseRA struct{ parquet.ReaderAtSeeker }

// NewReader reads a trace from r; name is used in errors. It reads the footer,
// Meta and schema now and fails with a clear error when r is not a Parquet
// file, is truncated, lacks the lessim metadata, or has columns of the wrong
// type. Close does not close r.
func NewReader(r parquet.ReaderAtSeeker, name string) (*Reader, error) {
	return newReaderCols(pqNoCloseRA{r}, name, 0, Columns{})
}

// NewReaderColumns is NewReader reading only the columns cols keeps.
func NewReaderColumns(r parquet.ReaderAtSeeker, name string, cols Columns) (*Reader, error) {
	return newReaderCols(pqNoCloseRA{r}, name, 0, cols)
}

// newReader is NewReader; batchRows > 0 overrides the record batch size
// (tests use it to make steps straddle batches).
func newReader(src parquet.ReaderAtSeeker, name string, batchRows int64) (*Reader, error) {
	return newReaderCols(src, name, batchRows, Columns{})
}

// newReaderCols is newReader reading only the columns cols keeps.
func newReaderCols(src parquet.ReaderAtSeeker, name string, batchRows int64, cols Columns) (rd *Reader, err error) {
	// NB: last resort only. pqsafe.Open checks the footer first; this turns
	// a panic inside arrow-go on a corrupt footer into an error.
	defer func() {
		if recover() != nil {
			rd, err = nil, pqsafe.Recovered(name)
		}
	}()
	pf, err := pqsafe.Open(src, name)
	if err != nil {
		return nil, err
	}
	r := &Reader{name: name, pf: pf}
	if err := r.init(batchRows, cols); err != nil {
		pf.Close()
		return nil, err
	}
	return r, nil
}

// init reads Meta and checks the schema, then starts the record reader.
func (r *Reader) init(batchRows int64, cols Columns) error {
	kv := r.pf.MetaData().KeyValueMetadata()
	ver := kv.FindValue(VersionKey)
	js := kv.FindValue(MetaKey)
	switch {
	case js == nil:
		return fmt.Errorf("%s: missing %s metadata (not a lessim trace?)", r.name, MetaKey)
	case ver == nil:
		return fmt.Errorf("%s: missing %s metadata", r.name, VersionKey)
	case *ver != FormatVersion:
		return fmt.Errorf("%s: trace format version %q not supported (this lessim reads version %s)", r.name, *ver, FormatVersion)
	}
	if err := decodeMeta([]byte(*js), &r.meta); err != nil {
		return fmt.Errorf("%s: bad %s metadata: %w", r.name, MetaKey, err)
	}
	if err := pqCheckMeta(&r.meta, r.name); err != nil {
		return err
	}
	r.read = cols.project(r.meta)
	layers := int64(len(r.meta.Model.Layers))
	rows := r.pf.NumRows()
	if rows%layers != 0 {
		// Not fatal here: Next reports the incomplete token with its row.
		r.steps = -1
	} else {
		r.steps = rows / layers
	}

	if batchRows <= 0 {
		batchRows = pqRows(&r.meta, pqBatchBytes, pqBatchMin, pqBatchMax)
	}
	arrProps := pqarrow.ArrowReadProperties{BatchSize: batchRows}
	fr, err := pqarrow.NewFileReader(r.pf, arrProps, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: reading schema: %w", r.name, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		return fmt.Errorf("%s: reading schema: %w", r.name, err)
	}
	r.noWeights = cols.NoWeights
	want, err := pqCheckColumns(sc, &r.read, r.noWeights)
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	var leaves []int
	for _, i := range want {
		leaves = pqLeaves(&fr.Manifest.Fields[i], leaves)
	}
	if rows > 0 {
		batchRows = min(batchRows, int64(bitutil.NextPowerOf2(int(rows))))
	}
	rr, err := newPQBatches(fr, leaves, batchRows)
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	// NB: decoding starts at the first Next (nextBatch), not here: a reader
	// opened for its Meta or row count alone decodes nothing.
	r.rr = rr

	r.bufs = make([]pqLayerBuf, layers)
	for i := range r.bufs {
		r.bufs[i].look = make([][]float32, r.meta.LookaheadDepth)
		r.bufs[i].lookHdr = make([][]float32, r.meta.LookaheadDepth)
	}
	r.step.Layers = make([]LayerStep, layers)
	return nil
}

// pqLeaves appends the Parquet leaf column indices under f.
func pqLeaves(f *pqarrow.SchemaField, out []int) []int {
	if f.IsLeaf() {
		return append(out, f.ColIndex)
	}
	for i := range f.Children {
		out = pqLeaves(&f.Children[i], out)
	}
	return out
}

// Meta returns the trace's metadata.
func (r *Reader) Meta() Meta { return r.meta }

// NumSteps returns the number of steps in the file according to its footer
// (rows ÷ MoE layers), or -1 when the row count is not a multiple of the
// layer count (Next will report the incomplete token).
func (r *Reader) NumSteps() int64 { return r.steps }

// Next reads the next step. It returns false at the end of the trace or on
// the first error; Err tells which.
func (r *Reader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	if err := r.readStep(); err != nil {
		if err != io.EOF {
			r.err = err
		}
		r.done = true
		return false
	}
	return true
}

// Step returns the step read by the last successful Next. It and every slice
// in it are valid until the next call to Next; copy what you keep.
func (r *Reader) Step() *Step { return &r.step }

// Err returns the first error met by Next, or nil at a clean end of trace.
func (r *Reader) Err() error { return r.err }

// Close releases the reader and, for Open, closes the file.
func (r *Reader) Close() error {
	r.done = true
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.ahead != nil {
		r.ahead.close()
		r.ahead = nil
	}
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	var errs []error
	if r.pf != nil {
		errs = append(errs, r.pf.Close())
		r.pf = nil
	}
	if r.file != nil {
		errs = append(errs, r.file.Close())
		r.file = nil
	}
	return errors.Join(errs...)
}

// nextBatch makes the next record batch current; io.EOF at the end.
func (r *Reader) nextBatch() error {
	if r.rec != nil {
		r.base += r.rec.NumRows()
		r.rec.Release()
		r.rec = nil
	}
	if r.ahead == nil {
		r.ahead = startReadAhead(r.rr)
	}
	rec, levels, err := r.ahead.next()
	if err == io.EOF {
		return err
	}
	if err == nil {
		err = r.bind(rec)
	}
	if err == nil {
		err = r.checkLists(rec, levels)
	}
	if err != nil {
		if rec != nil {
			rec.Release()
		}
		var pe *pqRowError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s: row %d: %s", r.name, pe.row, pe.msg)
		}
		return fmt.Errorf("%s: near row %d: %w", r.name, r.base, err)
	}
	r.rec, r.idx = rec, 0
	return nil
}

// pqRowError is a problem nextBatch found at a known file row.
type pqRowError struct {
	row int64
	msg string
}

func (e *pqRowError) Error() string { return fmt.Sprintf("row %d: %s", e.row, e.msg) }

// checkLists refuses a batch of rec that holds a null list element the
// arrays do not show (pqList.short, pqList.levelsOK), naming the element
// from the file's levels when it can find it. levels is rec's columns' level
// counts.
func (r *Reader) checkLists(rec arrow.RecordBatch, levels []int) error {
	for _, c := range r.batch.lists() {
		if c.list == nil {
			continue
		}
		short := c.short()
		n := -1
		if fi := rec.Schema().FieldIndices(c.name); len(fi) == 1 && fi[0] < len(levels) {
			n = levels[fi[0]]
		}
		if !short && (n < 0 || c.levelsOK(n)) {
			continue
		}
		if row, j, ok := pqFindNullElement(r.pf, c.name); ok {
			return &pqRowError{row: row, msg: fmt.Sprintf("%s[%d] is null", c.name, j)}
		}
		if short {
			_, end := c.list.ValueOffsets(c.list.Len() - 1)
			return fmt.Errorf("%s: corrupt list: offsets reach %d of %d values", c.name, end, c.child.Len())
		}
		return fmt.Errorf("%s: corrupt list: %d rows hold %d Parquet levels, want %d", c.name, c.list.Len(), n, c.wantLevels())
	}
	return nil
}

// errUnreadable is the error for a panic recovered while decoding a
// trace's pages: the file is corrupt in a way the checks did not catch. The
// panic's text (a Go runtime error inside arrow-go) is not shown.
var errUnreadable = errors.New("corrupt Parquet data (the Parquet reader failed on it)")

// bind makes rec's columns current. NB: last resort only, as in newReader:
// arrow-go may panic on a corrupt batch; report it instead of crashing.
func (r *Reader) bind(rec arrow.RecordBatch) (err error) {
	defer func() {
		if recover() != nil {
			err = errUnreadable
		}
	}()
	return r.batch.bind(rec, &r.read, r.noWeights)
}

// readStep assembles the next token's rows into r.step.
func (r *Reader) readStep() error {
	layers := len(r.meta.Model.Layers)
	s := &r.step
	var start int64
	for k := 0; k < layers; k++ {
		if r.rec == nil || r.idx >= int(r.rec.NumRows()) {
			if err := r.nextBatch(); err != nil {
				if err == io.EOF && k > 0 {
					return fmt.Errorf("%s: row %d: token (seq %d, pos %d) has %d layers, want %d (file ends)", r.name, start+int64(k)-1, s.Seq, s.Pos, k, layers)
				}
				return err
			}
		}
		row := r.base + int64(r.idx)
		if k == 0 {
			start = row
		}
		if err := r.readRow(k, row); err != nil {
			return fmt.Errorf("%s: row %d: %w", r.name, row, err)
		}
		r.idx++
	}
	if e := r.checker.check(&r.read, s); e != nil {
		p := e.Problems[0]
		row := start + int64(max(p.Layer, 0))
		msg := p.Msg
		if more := len(e.Problems) - 1 + e.More; more > 0 {
			msg += fmt.Sprintf(" (and %d more problems in token (seq %d, pos %d))", more, s.Seq, s.Pos)
		}
		return fmt.Errorf("%s: row %d: %s", r.name, row, msg)
	}
	if r.read.LookaheadTop > 0 {
		// Policies see a depth as present when Lookahead has it; its scores
		// are in LookaheadIndex.
		for k := range s.Layers {
			ls, buf := &s.Layers[k], &r.bufs[k]
			if n := len(ls.LookaheadIndex); n > 0 {
				for len(buf.empty) < n {
					buf.empty = append(buf.empty, nil)
				}
				for d := range n {
					buf.empty[d] = nil
					if buf.present[d] {
						buf.empty[d] = []float32{}
					}
				}
				ls.Lookahead = buf.empty[:n]
			}
		}
	}
	return nil
}
