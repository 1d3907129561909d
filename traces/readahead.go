package traces

import (
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// aheadDepth is how many decoded record batches the read-ahead holds ready:
// one being assembled by the caller, aheadDepth waiting, one being decoded.
const aheadDepth = 1

// readAhead decodes a Reader's record batches on its own goroutine, so that
// Parquet decoding (most of the cost of reading a trace) overlaps the
// caller's work on the previous batch: with a second core, streaming a trace
// costs about max(decoding, simulating) rather than their sum. Batches come
// out in file order, so the reader stays deterministic.
type readAhead struct {
	out  chan aheadBatch
	stop chan struct{}
	done chan struct{} // closed when the goroutine has returned
}

// aheadBatch is one decoded record batch (retained for the receiver) and its
// columns' Parquet level counts (pqBatches.Levels), or the error that ended
// decoding (io.EOF at the end of the file).
type aheadBatch struct {
	rec    arrow.RecordBatch
	levels []int
	err    error
}

// startReadAhead starts decoding rr's batches; the readAhead owns rr's Next
// from now on.
func startReadAhead(rr *pqBatches) *readAhead {
	a := &readAhead{out: make(chan aheadBatch, aheadDepth), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run(rr)
	return a
}

// run decodes until the end, an error, or stop.
func (a *readAhead) run(rr *pqBatches) {
	defer close(a.done)
	defer close(a.out)
	err := a.decode(rr)
	if err == nil {
		err = io.EOF
	}
	select {
	case a.out <- aheadBatch{err: err}:
	case <-a.stop:
	}
}

// decode sends each non-empty batch; it returns rr's error, or nil at the
// end or on stop. NB: last resort only, as in newReader: arrow-go may panic
// decoding a corrupt page, and a panic on this goroutine would end the
// process; it becomes the error the caller receives.
func (a *readAhead) decode(rr *pqBatches) (err error) {
	defer func() {
		if recover() != nil {
			err = errUnreadable
		}
	}()
	for rr.Next() {
		rec := rr.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		select {
		case a.out <- aheadBatch{rec: rec, levels: slices.Clone(rr.Levels())}:
		case <-a.stop:
			rec.Release()
			return nil
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return err
	}
	return nil
}

// next is the next decoded batch (its reference now the caller's) with its
// columns' level counts, or the error that ended decoding.
func (a *readAhead) next() (arrow.RecordBatch, []int, error) {
	b, ok := <-a.out
	if !ok {
		return nil, nil, io.EOF
	}
	return b.rec, b.levels, b.err
}

// close stops the goroutine, releases batches it decoded that nobody took,
// and waits for it to return (so rr can be released safely).
func (a *readAhead) close() {
	close(a.stop)
	for b := range a.out {
		if b.rec != nil {
			b.rec.Release()
		}
	}
	<-a.done
}
