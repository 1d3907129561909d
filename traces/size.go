package traces

import "math"

// SizeSample is how many steps EstimateSize writes to measure a trace's
// bytes per step: a few hundred tokens, well inside one row group (1,024
// rows or more), cheap next to any trace worth checking.
const SizeSample = 256

// SizeEstimate is the expected size of a trace file, measured by writing
// the start of it with the writer's own settings (EstimateSize).
type SizeEstimate struct {
	Steps   int64   // steps in the whole trace
	Sampled int     // steps written to measure PerStep
	Fixed   int64   // bytes of the trace with no steps: header, Meta (the model spec), footer
	PerStep float64 // bytes per step beyond Fixed, over the sample
}

// Bytes is the estimated file size, Fixed + PerStep × Steps, rounded up.
func (e SizeEstimate) Bytes() int64 {
	b := math.Ceil(float64(e.Fixed) + e.PerStep*float64(e.Steps))
	if b >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(b)
}

// EstimateSize estimates the size of the trace file Create would write for
// meta and steps steps, whose first ones src yields. It writes meta with no
// steps, then the first SizeSample steps of src (all of them if fewer), to a
// byte counter with Create's settings (encodings, zstd, row groups) and
// extrapolates linearly: every step has the same columns and shapes, so a
// step's bytes vary only with how well its values compress. Measured rather
// than modelled because the column encodings (dictionaries, byte-stream
// split, zstd) defeat a formula. The sample is one small row group, so its
// per-group overhead makes the estimate slightly high (under 1% for the
// shapes TestEstimateSize checks).
//
// It returns as rest the Source of all of src's steps, to write the trace
// from: the sampled ones again, then those src has not yielded yet, so a
// generated or read trace is made once. The sampled steps are kept as deep
// copies until rest passes them (a slice source is wound back instead);
// src must not be used afterwards.
func EstimateSize(meta Meta, src Source, steps int64) (e SizeEstimate, rest Source, err error) {
	e = SizeEstimate{Steps: steps}
	fixed, _, err := sampleBytes(meta, nil, 0)
	if err != nil {
		return e, nil, err
	}
	var rewind func() Source
	if s, ok := src.(*sliceSource); ok {
		// NB: a slice source's steps stay valid: it is wound back, not copied.
		at := s.i
		rewind = func() Source { s.i = at; return s }
	} else {
		keep := &replaySource{src: src}
		src, rewind = keep, func() Source { keep.replaying = true; return keep }
	}
	all, n, err := sampleBytes(meta, src, SizeSample)
	if err != nil {
		return e, nil, err
	}
	e.Fixed, e.Sampled = fixed, n
	if n > 0 {
		e.PerStep = float64(all-fixed) / float64(n)
	}
	return e, rewind(), nil
}

// sampleBytes writes meta and the first limit steps of src (none when src is
// nil) as a trace and returns its bytes and the steps written.
func sampleBytes(meta Meta, src Source, limit int) (int64, int, error) {
	var c byteCounter
	w, err := NewWriter(&c, meta)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for src != nil && n < limit && src.Next() {
		if err := w.Write(src.Step()); err != nil {
			w.Abort()
			return 0, 0, err
		}
		n++
	}
	if src != nil {
		if err := src.Err(); err != nil {
			w.Abort()
			return 0, 0, err
		}
	}
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	return int64(c), n, nil
}

// replaySource passes src's steps on and keeps a deep copy of each until
// replaying is set; from then on it yields the kept steps again, dropping
// each as it goes, and then src's next ones, keeping no more.
type replaySource struct {
	src       Source
	kept      []Step
	replaying bool
	cur       *Step
}

func (r *replaySource) Next() bool {
	if r.replaying && len(r.kept) > 0 {
		r.cur = &r.kept[0]
		if r.kept = r.kept[1:]; len(r.kept) == 0 {
			r.kept = nil
		}
		return true
	}
	if !r.src.Next() {
		r.cur = nil
		return false
	}
	r.cur = r.src.Step()
	if !r.replaying {
		r.kept = append(r.kept, CloneStep(r.cur))
	}
	return true
}

func (r *replaySource) Step() *Step { return r.cur }
func (r *replaySource) Err() error  { return r.src.Err() }

// byteCounter is an io.Writer that only counts.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}
