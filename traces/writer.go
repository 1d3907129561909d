package traces

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lessim/lessim/internal/atomicfile"
)

// Writer writes steps to a trace file: one Parquet row per token per MoE
// layer, rows in the order the steps are written. Rows are buffered into row
// groups of whole tokens, of a size that follows from Meta; Close writes the
// last one and the footer. A Writer is not safe for concurrent use.
type Writer struct {
	meta    Meta
	name    string // file name for errors, "" for NewWriter
	fw      *pqarrow.FileWriter
	bw      *bufio.Writer
	file    *atomicfile.File // set by Create; committed by Close
	rb      *array.RecordBuilder
	cols    pqBuilders
	rows    int64 // rows in rb
	groupSz int64
	checker stepChecker
	err     error // sticky I/O error
	closed  bool
}

// pqBuilders are the typed column builders of a RecordBuilder.
type pqBuilders struct {
	seq, pos, pass   *array.Int32Builder
	phase            *array.Uint8Builder
	layer            *array.Int16Builder
	experts, weights *array.ListBuilder
	expertV          *array.Int32Builder
	weightV          *array.Float32Builder
	logits, ri       *array.ListBuilder // nil when absent
	logitV, riV      *array.Float32Builder
	look             []*array.ListBuilder
	lookV            []*array.Float32Builder
	lookTop          []*array.ListBuilder // compact lookahead (Meta.LookaheadTop)
	lookTopV         []*array.Int32Builder
	lookSum          []*array.Float64Builder
	topBuf           []int32
	scoreBuf         []float32
	hit              *array.ListBuilder
	hitV             *array.BooleanBuilder
	computeNS        *array.Int64Builder
}

// Create returns a Writer for a trace described by meta, to be written at
// path atomically (package internal/atomicfile): the rows go to a temporary
// file beside path, and only a successful Close puts it in place. Until then,
// and whenever Close fails or Abort is called, whatever was at path stays
// as it was and the temporary is removed.
func Create(path string, meta Meta) (*Writer, error) {
	if err := pqCheckMeta(&meta, path); err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := newWriter(bw, meta, path)
	if err != nil {
		return nil, errors.Join(err, f.Abort())
	}
	w.bw, w.file = bw, f
	return w, nil
}

// NewWriter returns a Writer that writes a trace described by meta to out.
// Close flushes the trace but does not close out.
func NewWriter(out io.Writer, meta Meta) (*Writer, error) {
	if err := pqCheckMeta(&meta, ""); err != nil {
		return nil, err
	}
	return newWriter(out, meta, "")
}

// pqNoClose hides an io.Writer's Close method: pqarrow's FileWriter.Close
// closes its sink when it can, and a Writer's Close must not close the
// caller's io.Writer (Create closes its own file after flushing).
type pqNoClose struct{ w io.Writer }

func (n pqNoClose) Write(p []byte) (int, error) { return n.w.Write(p) }

func newWriter(out io.Writer, meta Meta, name string) (*Writer, error) {
	js, err := pqMetaJSON(&meta)
	if err != nil {
		return nil, err
	}
	sc := pqSchema(&meta)
	fw, err := pqarrow.NewFileWriter(sc, pqNoClose{out}, pqWriterProps(&meta), pqarrow.NewArrowWriterProperties())
	if err != nil {
		return nil, fmt.Errorf("creating trace writer: %w", err)
	}
	if err := errors.Join(fw.AppendKeyValueMetadata(VersionKey, FormatVersion), fw.AppendKeyValueMetadata(MetaKey, js)); err != nil {
		return nil, fmt.Errorf("creating trace writer: %w", err)
	}
	w := &Writer{
		meta:    meta,
		name:    name,
		fw:      fw,
		rb:      array.NewRecordBuilder(memory.DefaultAllocator, sc),
		groupSz: pqRows(&meta, pqRowGroupBytes, pqRowGroupMin, pqRowGroupMax),
	}
	w.bindBuilders()
	return w, nil
}

// bindBuilders caches the typed field builders in schema order (pqSchema).
func (w *Writer) bindBuilders() {
	f := w.rb.Fields()
	c := &w.cols
	c.seq, c.pos = f[0].(*array.Int32Builder), f[1].(*array.Int32Builder)
	c.phase, c.pass = f[2].(*array.Uint8Builder), f[3].(*array.Int32Builder)
	c.layer = f[4].(*array.Int16Builder)
	c.experts = f[5].(*array.ListBuilder)
	c.expertV = c.experts.ValueBuilder().(*array.Int32Builder)
	c.weights = f[6].(*array.ListBuilder)
	c.weightV = c.weights.ValueBuilder().(*array.Float32Builder)
	i := 7
	if w.meta.HasLogits {
		c.logits = f[i].(*array.ListBuilder)
		c.logitV = c.logits.ValueBuilder().(*array.Float32Builder)
		i++
	}
	for range w.meta.LookaheadDepth {
		if w.meta.LookaheadTop > 0 {
			t := f[i].(*array.ListBuilder)
			c.lookTop = append(c.lookTop, t)
			c.lookTopV = append(c.lookTopV, t.ValueBuilder().(*array.Int32Builder))
			i++
		}
		b := f[i].(*array.ListBuilder)
		c.look = append(c.look, b)
		c.lookV = append(c.lookV, b.ValueBuilder().(*array.Float32Builder))
		i++
		if w.meta.LookaheadTop > 0 {
			c.lookSum = append(c.lookSum, f[i].(*array.Float64Builder))
			i++
		}
	}
	if w.meta.HasRouterInputs {
		c.ri = f[i].(*array.ListBuilder)
		c.riV = c.ri.ValueBuilder().(*array.Float32Builder)
		i++
	}
	c.hit = f[i].(*array.ListBuilder)
	c.hitV = c.hit.ValueBuilder().(*array.BooleanBuilder)
	c.computeNS = f[i+1].(*array.Int64Builder)
}

// Meta returns the meta the Writer was created with.
func (w *Writer) Meta() Meta { return w.meta }

// Write validates s (see Validate) and appends its rows. An invalid step is
// rejected with a *StepError and nothing is written; the Writer stays usable.
// An I/O error is sticky: every later call returns it.
func (w *Writer) Write(s *Step) error {
	switch {
	case w.closed:
		return errors.New("trace writer: Write after Close")
	case w.err != nil:
		return w.err
	}
	if s == nil {
		return errors.New("trace writer: nil step")
	}
	if e := w.checker.check(&w.meta, s); e != nil {
		cp := *e
		cp.Problems = slices.Clone(e.Problems)
		return w.wrap(&cp)
	}
	// Row groups hold whole tokens: start a new one rather than split a step.
	if w.rows > 0 && w.rows+int64(len(s.Layers)) > w.groupSz {
		if err := w.flush(); err != nil {
			return err
		}
	}
	c := &w.cols
	for i := range s.Layers {
		ls := &s.Layers[i]
		c.seq.Append(s.Seq)
		c.pos.Append(s.Pos)
		c.phase.Append(uint8(s.Phase))
		c.pass.Append(s.Pass)
		c.layer.Append(int16(i))
		c.experts.Append(true)
		c.expertV.AppendValues(ls.Experts, nil)
		pqAppendList(c.weights, c.weightV, ls.Weights)
		if c.logits != nil {
			pqAppendList(c.logits, c.logitV, ls.Logits)
		}
		for d, b := range c.look {
			var sc []float32
			if d < len(ls.Lookahead) {
				sc = ls.Lookahead[d]
			}
			if c.lookTop != nil {
				w.appendCompact(d, sc)
				continue
			}
			pqAppendList(b, c.lookV[d], sc)
		}
		if c.ri != nil {
			pqAppendList(c.ri, c.riV, ls.RouterInput)
		}
		if ls.Hit == nil {
			c.hit.AppendNull()
		} else {
			c.hit.Append(true)
			c.hitV.AppendValues(ls.Hit, nil)
		}
		c.computeNS.Append(ls.ComputeNS)
	}
	w.rows += int64(len(s.Layers))
	return nil
}

// appendCompact appends depth d's compact lookahead for scores sc: its
// Meta.LookaheadTop best candidates (TopIndices), their scores and softmax
// sum, as IndexLookahead computes them; nulls when sc is nil.
func (w *Writer) appendCompact(d int, sc []float32) {
	c := &w.cols
	if sc == nil {
		c.lookTop[d].AppendNull()
		c.look[d].AppendNull()
		c.lookSum[d].AppendNull()
		return
	}
	c.topBuf = TopIndices(c.topBuf[:0], sc, w.meta.LookaheadTop)
	c.scoreBuf = c.scoreBuf[:0]
	for _, e := range c.topBuf {
		c.scoreBuf = append(c.scoreBuf, sc[e])
	}
	c.lookTop[d].Append(true)
	c.lookTopV[d].AppendValues(c.topBuf, nil)
	c.look[d].Append(true)
	c.lookV[d].AppendValues(c.scoreBuf, nil)
	if len(c.topBuf) == 0 {
		c.lookSum[d].Append(0)
		return
	}
	c.lookSum[d].Append(SoftmaxSum(sc, sc[c.topBuf[0]]))
}

// pqAppendList appends v as one list, or null when v is nil.
func pqAppendList(b *array.ListBuilder, vb *array.Float32Builder, v []float32) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(true)
	vb.AppendValues(v, nil)
}

// flush writes the buffered rows as one row group.
func (w *Writer) flush() error {
	if w.rows == 0 {
		return nil
	}
	rec := w.rb.NewRecordBatch()
	defer rec.Release()
	w.rows = 0
	if err := w.fw.Write(rec); err != nil {
		w.err = w.wrap(fmt.Errorf("writing row group: %w", err))
		return w.err
	}
	return nil
}

// Close writes the buffered rows and the file footer (with Meta); for a
// Writer from Create it then commits the file (sync, rename over the path)
// or, on any error, removes the temporary and leaves the path untouched. It
// is safe to call twice.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	defer w.rb.Release()
	err := w.err
	if err == nil {
		err = w.flush()
	}
	if err == nil {
		if e := w.fw.Close(); e != nil {
			err = w.wrap(fmt.Errorf("closing trace: %w", e))
		}
	}
	if w.bw != nil && err == nil {
		if e := w.bw.Flush(); e != nil {
			err = w.wrap(e)
		}
	}
	if w.file != nil {
		if err == nil {
			err = w.file.Commit()
		} else {
			w.file.Abort()
		}
	}
	w.err = err
	return err
}

// Abort ends the Writer without finishing the trace: for a Writer from
// Create the temporary file is removed and the path keeps what it had; for
// one from NewWriter nothing more is written (what was written stays). Use
// it when the steps' source fails; a later Close returns an error. Abort
// after Close, or twice, does nothing.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.rb.Release()
	if w.file != nil {
		w.file.Abort()
	}
	w.err = w.wrap(errors.New("trace writer aborted"))
}

// wrap prefixes err with the file name when the Writer has one.
func (w *Writer) wrap(err error) error {
	if w.name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", w.name, err)
}

// WriteFile writes every step of src to a new trace file at path, as Create
// does (atomically: a failure leaves whatever was at path). Use
// NewSliceSource for steps in memory.
func WriteFile(path string, meta Meta, src Source) error {
	w, err := Create(path, meta)
	if err != nil {
		return err
	}
	return w.copy(src)
}

// Encode writes every step of src to out as a trace file, as NewWriter
// does (out is not closed).
func Encode(out io.Writer, meta Meta, src Source) error {
	w, err := NewWriter(out, meta)
	if err != nil {
		return err
	}
	return w.copy(src)
}

// copy writes every step of src and closes w, or aborts it on an error.
func (w *Writer) copy(src Source) error {
	for src.Next() {
		if err := w.Write(src.Step()); err != nil {
			w.Abort()
			return err
		}
	}
	if err := src.Err(); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}
