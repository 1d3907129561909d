package policies

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
// shared by every run over the trace, adds 4 bytes per distinct selection
// (uint32 positions) and 8 bytes per (layer, expert) key; each oracle run
// adds 12 bytes per key and a bit per (token, layer): about 6 bytes per
// selection in all, 1.9 KB per token of the 40-layer, top-8 shape (the steps
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
	i := s*f.layers + l
	if f.k >= 0 {
		return f.sel[i*f.k : (i+1)*f.k]
	}
	return f.sel[f.off[i]:f.off[i+1]]
}

// Bytes is the memory the Future holds (its slices' lengths).
func (f *Future) Bytes() int64 {
	return int64(len(f.prompt)) + 2*int64(len(f.sel)) + 8*int64(len(f.off))
}

// nextUses is a Future's next-use index, shared by every run over the trace:
// the distinct use positions (step×layers + layer) of each (layer, expert)
// key in trace order, CSR-style, each key's run ended by noUse. It is
// read-only once built.
type nextUses struct {
	start []int32  // uses of key k are at[start[k]:start[k+1]-1]
	at    []uint32 // use positions, ascending per key; at[start[k+1]-1] == noUse
}

// NextUses builds (once, safe for concurrent runs) and returns the index.
func (f *Future) nextUses() (*nextUses, error) {
	f.usesOnce.Do(func() { f.uses, f.usesErr = buildNextUses(f) })
	return f.uses, f.usesErr
}

// buildNextUses counts each key's distinct uses, then fills their positions.
func buildNextUses(f *Future) (*nextUses, error) {
	if int64(f.Len())*int64(f.layers) > math.MaxUint32 {
		return nil, fmt.Errorf("a trace of %d steps × %d layers has more use positions than the next-use index holds (2^32)", f.Len(), f.layers)
	}
	n := f.layers * f.experts
	u := &nextUses{start: make([]int32, n+1)}
	f.forEachUse(func(k int, _ uint32) { u.start[k+1]++ })
	for k := range n {
		u.start[k+1] += u.start[k] + 1 // NB: + 1 for the key's noUse
	}
	u.at = make([]uint32, u.start[n])
	fill := slices.Clone(u.start[:n])
	f.forEachUse(func(k int, pos uint32) {
		u.at[fill[k]] = pos
		fill[k]++
	})
	for k := range n {
		u.at[fill[k]] = noUse
	}
	return u, nil
}

// forEachUse calls fn for every distinct (key, position) of the trace, in trace order.
func (f *Future) forEachUse(fn func(k int, pos uint32)) {
	for s := range f.Len() {
		for l := range f.layers {
			xs := f.Experts(s, l)
			base := l * f.experts
			pos := uint32(s*f.layers + l)
			for i, e := range xs {
				if dupBefore(xs, i) {
					continue
				}
				fn(base+int(e), pos)
			}
		}
	}
}
