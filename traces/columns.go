package traces

import "os"

// Columns says which optional vector columns a Reader skips. The zero value
// reads every column the file has (what Open does). A skipped vector is nil in
// every Step, as if it had not been recorded, but Meta still describes the
// file (Meta.HasLogits, Meta.LookaheadDepth and so on are unchanged), so a
// skipped column is never mistaken for an absent one. Skipping a column saves
// its decoding and its memory: the router logits and lookahead scores hold
// one float32 per expert per layer per token, the router input one per hidden
// unit, against top-k experts and weights for the columns always read.
type Columns struct {
	// NoLogits skips the router logits.
	NoLogits bool
	// NoRouterInputs skips the router input vectors.
	NoRouterInputs bool
	// NoLookahead skips every lookahead depth.
	NoLookahead bool
	// NoWeights skips the gate weights (Step's Weights are then nil); the
	// simulator never reads them.
	NoWeights bool
}

// project is m as the reader reads it: the skipped vectors marked absent.
func (c Columns) project(m Meta) Meta {
	if c.NoLogits {
		m.HasLogits = false
	}
	if c.NoRouterInputs {
		m.HasRouterInputs = false
	}
	if c.NoLookahead {
		m.LookaheadDepth, m.LookaheadTop = 0, 0
	}
	return m
}

// OpenColumns opens the trace file at path like Open, reading only the
// columns cols keeps.
func OpenColumns(path string, cols Columns) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// NB: the Parquet reader must not close f (file.Reader.Close closes a
	// source that has Close, and so did a failed open): f is closed once,
	// here on failure or by Reader.Close.
	r, err := newReaderCols(pqNoCloseRA{f}, path, 0, cols)
	if err != nil {
		f.Close() // read-only: the open error is the one to report
		return nil, err
	}
	r.file = f
	return r, nil
}
