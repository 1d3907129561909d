package sim

import (
	"fmt"

	"github.com/lessim/lessim/traces"
)

// window holds the trace steps the engine is working on: the current pass's
// tokens and the one step after them it peeks at to find where the pass ends.
// It pulls steps from a traces.Source on demand and drops them once the
// engine is past them, so a run holds at most one pass (a prompt's prefill,
// or a speculative block plus the rejected drafts it re-verifies) and one
// more step, whatever the trace's length.
//
// A source whose steps stay valid after Next (a slice, see
// traces.NewSliceSource) is used in place; any other source's steps are
// copied into buffers the window reuses. Every step is validated against
// the model as it enters (the same checks and messages Run has always had).
type window struct {
	src    traces.Source
	stable bool
	check  func(i int, s *traces.Step) error

	steps []*traces.Step // steps base, base+1, ...
	base  int            // trace index of steps[0]
	spare []*traces.Step // copies no longer in use, for reuse
	done  bool
}

// stableSource is a Source whose steps stay valid after Next.
type stableSource interface{ StepsStable() bool }

func newWindow(src traces.Source, check func(int, *traces.Step) error) *window {
	st, ok := src.(stableSource)
	return &window{src: src, stable: ok && st.StepsStable(), check: check}
}

// at returns trace step i (i ≥ the last release), reading up to it; nil at
// the end of the trace. A read or validation error ends the run.
func (w *window) at(i int) (*traces.Step, error) {
	for i-w.base >= len(w.steps) {
		if w.done {
			return nil, nil
		}
		if !w.src.Next() {
			w.done = true
			if err := w.src.Err(); err != nil {
				return nil, err
			}
			return nil, nil
		}
		s := w.src.Step()
		if s == nil {
			return nil, fmt.Errorf("step %d: the trace source returned no step", w.base+len(w.steps))
		}
		if err := w.check(w.base+len(w.steps), s); err != nil {
			return nil, err
		}
		if !w.stable {
			var c *traces.Step
			if n := len(w.spare); n > 0 {
				c, w.spare = w.spare[n-1], w.spare[:n-1]
			} else {
				c = new(traces.Step)
			}
			traces.CopyStep(c, s)
			s = c
		}
		w.steps = append(w.steps, s)
	}
	return w.steps[i-w.base], nil
}

// span is steps i..j-1, all read already (by at); valid until the next release.
func (w *window) span(i, j int) []*traces.Step { return w.steps[i-w.base : j-w.base] }

// release drops the steps before i.
func (w *window) release(i int) {
	n := min(i-w.base, len(w.steps))
	if n <= 0 {
		return
	}
	if !w.stable {
		w.spare = append(w.spare, w.steps[:n]...)
	}
	rest := copy(w.steps, w.steps[n:])
	clear(w.steps[rest:])
	w.steps = w.steps[:rest]
	w.base += n
}
