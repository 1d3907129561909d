package traces

import "slices"

// sliceSource is a Source over steps held in memory.
type sliceSource struct {
	steps []Step
	i     int // index of the current step + 1
}

// NewSliceSource returns a Source that yields &steps[0], &steps[1], ... in
// order and never fails. The steps are not copied: the Source hands out
// pointers into the caller's slice.
func NewSliceSource(steps []Step) Source {
	return &sliceSource{steps: steps}
}

func (s *sliceSource) Next() bool {
	if s.i >= len(s.steps) {
		return false
	}
	s.i++
	return true
}

func (s *sliceSource) Step() *Step {
	if s.i == 0 || s.i > len(s.steps) {
		return nil
	}
	return &s.steps[s.i-1]
}

func (s *sliceSource) Err() error { return nil }

// ReadAll drains src and returns deep copies of all its steps, so they stay
// valid after the source reuses its buffers. It returns the steps read so far
// with src's error, if any.
func ReadAll(src Source) ([]Step, error) {
	var out []Step
	for src.Next() {
		out = append(out, CloneStep(src.Step()))
	}
	return out, src.Err()
}

// CloneStep returns a deep copy of s: no slice of the copy aliases s. Nil
// slices stay nil and empty ones stay empty, so a clone is field-for-field
// equal to the original.
func CloneStep(s *Step) Step {
	c := *s
	c.Layers = make([]LayerStep, len(s.Layers))
	for i := range s.Layers {
		src, dst := &s.Layers[i], &c.Layers[i]
		*dst = *src
		dst.Experts = slices.Clone(src.Experts)
		dst.Weights = slices.Clone(src.Weights)
		dst.Logits = slices.Clone(src.Logits)
		dst.RouterInput = slices.Clone(src.RouterInput)
		dst.Hit = slices.Clone(src.Hit)
		if src.LookaheadIndex != nil {
			dst.LookaheadIndex = make([]CandidateIndex, len(src.LookaheadIndex))
			for d, ci := range src.LookaheadIndex {
				ci.Top, ci.Score = slices.Clone(ci.Top), slices.Clone(ci.Score)
				dst.LookaheadIndex[d] = ci
			}
		}
		if src.Lookahead != nil {
			dst.Lookahead = make([][]float32, len(src.Lookahead))
			for d, sc := range src.Lookahead {
				dst.Lookahead[d] = slices.Clone(sc)
			}
		}
	}
	if s.Layers == nil {
		c.Layers = nil
	}
	return c
}

// StepsStable reports that the steps a slice source hands out stay valid
// after Next (they point into the caller's slice), so readers may keep them.
func (s *sliceSource) StepsStable() bool { return true }

// CopyStep makes dst a deep copy of src, reusing dst's buffers: no slice of
// dst aliases src afterwards. Nil slices stay nil and empty ones empty, as
// with CloneStep. Streaming readers use it to keep a few steps without
// allocating for each.
func CopyStep(dst, src *Step) {
	layers := dst.Layers
	*dst = *src
	if src.Layers == nil {
		dst.Layers = nil
		return
	}
	if cap(layers) < len(src.Layers) {
		layers = append(layers[:cap(layers)], make([]LayerStep, len(src.Layers)-cap(layers))...)
	}
	dst.Layers = layers[:len(src.Layers)]
	for i := range src.Layers {
		copyLayer(&dst.Layers[i], &src.Layers[i])
	}
}

// copyLayer makes d a deep copy of s, reusing d's buffers.
func copyLayer(d, s *LayerStep) {
	look, index := d.Lookahead, d.LookaheadIndex
	d.Experts = reuse(d.Experts, s.Experts)
	d.Weights = reuse(d.Weights, s.Weights)
	d.Logits = reuse(d.Logits, s.Logits)
	d.RouterInput = reuse(d.RouterInput, s.RouterInput)
	d.Hit = reuse(d.Hit, s.Hit)
	d.ComputeNS = s.ComputeNS
	d.Lookahead, d.LookaheadIndex = nil, nil
	if s.Lookahead != nil {
		look = slices.Grow(look[:0], len(s.Lookahead))[:len(s.Lookahead)]
		for k, sc := range s.Lookahead {
			look[k] = reuse(look[k], sc)
		}
		d.Lookahead = look
	}
	if s.LookaheadIndex != nil {
		index = slices.Grow(index[:0], len(s.LookaheadIndex))[:len(s.LookaheadIndex)]
		for k, ci := range s.LookaheadIndex {
			top, score := index[k].Top, index[k].Score
			index[k] = ci
			index[k].Top, index[k].Score = reuse(top, ci.Top), reuse(score, ci.Score)
		}
		d.LookaheadIndex = index
	}
}

// reuse copies s into d's buffer (grown when short): nil for nil s, empty for
// empty s.
func reuse[T any](d, s []T) []T {
	if s == nil {
		return nil
	}
	if d == nil {
		d = make([]T, 0, len(s))
	}
	return append(d[:0], s...)
}

// MaxPos is the largest position of the slice's steps (false when empty).
func (s *sliceSource) MaxPos() (int32, bool) {
	if len(s.steps) == 0 {
		return 0, false
	}
	m := s.steps[0].Pos
	for i := range s.steps {
		m = max(m, s.steps[i].Pos)
	}
	return m, true
}

// SliceOf returns the steps behind a Source from NewSliceSource (false for
// any other Source, e.g. a trace file read as it goes).
func SliceOf(src Source) ([]Step, bool) {
	s, ok := src.(*sliceSource)
	if !ok {
		return nil, false
	}
	return s.steps, true
}
