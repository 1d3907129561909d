package policies

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// Future is a whole trace's expert column in compact form: what oracle,
// belady and pinned-hot need to know of the future (every step's selected
// experts per layer and whether it is a prompt token), without the steps'
// other columns or headers. It is built in one streaming pass over a trace
// (NewFuture), so a policy that needs the future never needs the trace in
// memory.
//
// Size: 2 bytes per expert selection (uint16 expert numbers) and 1 byte per
// token, plus 8 bytes per (token, layer) only when the trace's selections are
// not all of one length. Oracle's next-use index, built from it once and
// shared by every run over the trace, adds 4 bytes per selection (uint32
// positions) and 4 bytes per (layer, expert) key; each oracle run adds 8
// bytes per key and 8 bytes and a bit per (token, layer): about 7 bytes per
// selection in all, 2.2 KB per token of the 40-layer, top-8 shape (the steps
// themselves take about 10 KB).
type Future struct {
	layers, experts int
	prompt          []bool   // per step: a prefill token
	k               int      // selections per (step, layer) while all have one length; -1 once they differ
	off             []int64  // when k < 0: start of (step, layer) in sel; len steps×layers+1
	sel             []uint16 // selected experts in trace, layer, rank order

	usesOnce sync.Once
	uses     *nextUses // oracle's next-use index, built on first use
	usesErr  error
}

// maxFutureExperts is the most experts per layer a Future stores (uint16).
const maxFutureExperts = 1 << 16

// NewFuture reads src to its end and keeps its expert column for model m. It
// checks every step as checkTrace does (layers and expert ranges) and
// reports the first problem with its step; a source error is returned as is
// (a trace file Reader's names the file and row).
func NewFuture(m *devices.ModelSpec, src traces.Source) (*Future, error) {
	return newFuture(m, src, 0)
}

// newFuture is NewFuture with room for steps steps (0: unknown) reserved up front.
func newFuture(m *devices.ModelSpec, src traces.Source, steps int) (*Future, error) {
	if m == nil || len(m.Layers) == 0 || m.Experts <= 0 {
		return nil, errors.New("future: model needs layers and experts")
	}
	if m.Experts > maxFutureExperts {
		return nil, fmt.Errorf("future: model %q has %d experts per layer, more than the %d the compact index holds", m.Name, m.Experts, maxFutureExperts)
	}
	f := &Future{layers: len(m.Layers), experts: m.Experts, k: -2}
	if steps > 0 {
		f.prompt = make([]bool, 0, steps)
		f.sel = make([]uint16, 0, steps*len(m.Layers)*max(m.TopK, 1))
	}
	for i := 0; src.Next(); i++ {
		if err := f.add(m, i, src.Step()); err != nil {
			return nil, err
		}
	}
	if err := src.Err(); err != nil {
		return nil, err
	}
	if len(f.prompt) == 0 {
		return nil, errors.New("trace: missing (this policy reads the whole trace)")
	}
	return f, nil
}

// FutureOf is the Future of an in-memory trace, to share between runs; a bad
// trace is refused with every problem (up to a bound), as the policies do.
func FutureOf(m *devices.ModelSpec, steps []traces.Step) (*Future, error) {
	if err := checkTrace(m, steps); err != nil {
		return nil, err
	}
	return futureOf(m, steps)
}

// futureOf is the Future of an in-memory trace already checked by checkTrace.
func futureOf(m *devices.ModelSpec, steps []traces.Step) (*Future, error) {
	return newFuture(m, traces.NewSliceSource(steps), len(steps))
}

// add appends step i.
func (f *Future) add(m *devices.ModelSpec, i int, s *traces.Step) error {
	if len(s.Layers) != f.layers {
		return fmt.Errorf("trace step %d: has %d MoE layers, model %q has %d", i, len(s.Layers), m.Name, f.layers)
	}
	for l := range s.Layers {
		xs := s.Layers[l].Experts
		for _, e := range xs {
			if e < 0 || int(e) >= f.experts {
				return fmt.Errorf("trace step %d layer %d: expert %d out of range [0,%d)", i, l, e, f.experts)
			}
		}
		switch {
		case f.k == -2:
			f.k = len(xs)
		case f.k >= 0 && len(xs) != f.k:
			// Lengths differ from here on: offsets for what came before.
			n := len(f.prompt)*f.layers + l
			f.off = make([]int64, n+1, 2*n+2)
			for j := range f.off {
				f.off[j] = int64(j * f.k)
			}
			f.k = -1
		}
		for _, e := range xs {
			f.sel = append(f.sel, uint16(e))
		}
		if f.k < 0 {
			f.off = append(f.off, int64(len(f.sel)))
		}
	}
	f.prompt = append(f.prompt, s.Phase == traces.Prefill)
	return nil
}

// Len is the number of steps.
func (f *Future) Len() int { return len(f.prompt) }

// Prompt reports whether step s is a prefill token.
func (f *Future) Prompt(s int) bool { return f.prompt[s] }

// Experts are step s's selected experts at layer l, in rank order; the slice
// is shared and must not be modified.
func (f *Future) Experts(s, l int) []uint16 {
	_, xs := f.at(s*f.layers + l)
	return xs
}

// Bytes is the memory the Future holds (its slices' lengths).
func (f *Future) Bytes() int64 {
	return int64(len(f.prompt)) + 2*int64(len(f.sel)) + 8*int64(len(f.off))
}

// nextUses is a Future's next-use index, shared by every run over the trace,
// in trace order so that a run reads it as it goes: for each selection (in
// Future.sel's order), the next position (step×layers + layer) at which its
// key is used again, and for each (layer, expert) key its first use
// position; noUse when there is none. It is read-only once built.
//
// NB: trace order, not a list of uses per key: a run consumes a use at the
// position it is simulating, and the next use of that key is then read from
// beside the selections it has just read, where a per-key list would be a
// cache miss at a random place for every use.
type nextUses struct {
	first  []uint32 // per key: its first use position
	follow []uint32 // per selection: its key's next use after this position
}

// NextUses builds (once, safe for concurrent runs) and returns the index.
func (f *Future) nextUses() (*nextUses, error) {
	f.usesOnce.Do(func() { f.uses, f.usesErr = buildNextUses(f) })
	return f.uses, f.usesErr
}

// buildNextUses fills the index from the last position back to the first,
// each selection taking its key's latest position seen so far.
func buildNextUses(f *Future) (*nextUses, error) {
	if int64(f.Len())*int64(f.layers) > math.MaxUint32 {
		return nil, fmt.Errorf("a trace of %d steps × %d layers has more use positions than the next-use index holds (2^32)", f.Len(), f.layers)
	}
	n := f.layers * f.experts
	u := &nextUses{first: make([]uint32, n), follow: make([]uint32, len(f.sel))}
	for k := range u.first {
		u.first[k] = noUse
	}
	for p := f.Len()*f.layers - 1; p >= 0; p-- {
		i, xs := f.at(p)
		base := (p % f.layers) * f.experts
		// NB: two loops, so a key selected twice at p reads the same next use.
		for j, e := range xs {
			u.follow[i+j] = u.first[base+int(e)]
		}
		for _, e := range xs {
			u.first[base+int(e)] = uint32(p)
		}
	}
	return u, nil
}

// at is position p's (step×layers + layer) selections and the index of
// the first in sel.
func (f *Future) at(p int) (int, []uint16) {
	if f.k >= 0 {
		return p * f.k, f.sel[p*f.k : (p+1)*f.k]
	}
	return int(f.off[p]), f.sel[f.off[p]:f.off[p+1]]
}

// followUse is the position of the use of key (layer's) expert e after its
// use at position p, which must be one.
func (f *Future) followUse(u *nextUses, p uint32, e uint16) uint32 {
	i, xs := f.at(int(p))
	for j, x := range xs {
		if x == e {
			return u.follow[i+j]
		}
	}
	// NB: unreachable: a key's next use is always a position that selects it.
	panic("policies: next-use index out of step with its trace")
}
