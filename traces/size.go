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
// shapes TestEstimateSize checks). src is consumed: pass a fresh copy of the
// source to be written (SynthSource gives the same steps again).
func EstimateSize(meta Meta, src Source, steps int64) (SizeEstimate, error) {
	e := SizeEstimate{Steps: steps}
	fixed, _, err := sampleBytes(meta, nil, 0)
	if err != nil {
		return e, err
	}
	all, n, err := sampleBytes(meta, src, SizeSample)
	if err != nil {
		return e, err
	}
	e.Fixed, e.Sampled = fixed, n
	if n > 0 {
		e.PerStep = float64(all-fixed) / float64(n)
	}
	return e, nil
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

// byteCounter is an io.Writer that only counts.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}
