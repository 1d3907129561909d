package policies

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// fixtureView is a plain slice-backed sim.CacheView for driving policies
// directly in tests: a test fixture, not a stand-in for the engine's books.
type fixtureView struct {
	model    *devices.ModelSpec
	state    []sim.Residency
	inUse    []bool
	capacity int64
	used     int64 // resident + loading bytes
	loading  int64
}

func newFixtureView(m *devices.ModelSpec, capacity int64) *fixtureView {
	n := len(m.Layers) * m.Experts
	return &fixtureView{model: m, state: make([]sim.Residency, n), inUse: make([]bool, n), capacity: capacity}
}

func (v *fixtureView) State(k sim.Key) sim.Residency { return v.state[k] }
func (v *fixtureView) InUse(k sim.Key) bool          { return v.inUse[k] }
func (v *fixtureView) Evictable(k sim.Key) bool      { return v.state[k] == sim.Resident && !v.inUse[k] }
func (v *fixtureView) FreeBytes() int64              { return v.capacity - v.used }
func (v *fixtureView) LoadingBytes() int64           { return v.loading }
func (v *fixtureView) CapacityBytes() int64          { return v.capacity }
func (v *fixtureView) ExpertBytes(layer int) int64   { return v.model.Layers[layer].ExpertBytes }

func (v *fixtureView) bytesOf(k sim.Key) int64 {
	l, _ := k.Split(v.model.Experts)
	return v.ExpertBytes(l)
}

// set puts k in state st, keeping the byte counts.
func (v *fixtureView) set(k sim.Key, st sim.Residency) {
	b := v.bytesOf(k)
	if v.state[k] != sim.Absent {
		v.used -= b
	}
	if v.state[k] == sim.Loading {
		v.loading -= b
	}
	v.state[k] = st
	if st != sim.Absent {
		v.used += b
	}
	if st == sim.Loading {
		v.loading += b
	}
}

// testModel is a model with the given per-layer expert sizes.
func testModel(experts, topK int, sizes ...int64) *devices.ModelSpec {
	m := &devices.ModelSpec{Name: "test", Arch: "qwen3moe", Blocks: len(sizes), Experts: experts, TopK: topK}
	for i, s := range sizes {
		m.Layers = append(m.Layers, devices.LayerSpec{Block: i, ExpertBytes: s})
	}
	return m
}

// outcome is one use in a replay: which key, and whether it was a hit.
type outcome struct {
	Key sim.Key
	Hit bool
}

func (o outcome) String() string {
	if o.Hit {
		return fmt.Sprintf("%d:hit", o.Key)
	}
	return fmt.Sprintf("%d:miss", o.Key)
}

// replayer is a simple byte-budgeted replay loop: one token per pass, loads
// finish at the end of the layer that started them, no time. With prefetch
// off it is a demand-only cache, the setting the slow reference caches model.
type replayer struct {
	view     *fixtureView
	pol      sim.Policy
	prefetch bool
	dst      []sim.Key
	sel      []sim.Key
	loads    []sim.Key
	la       sim.Lookahead
	scores   [][][]float32
	victims  []sim.Key // every victim named, in order
	events   int64     // policy calls: Prefetch, Observe, Victim
}

func newReplayer(m *devices.ModelSpec, capacity int64, pol sim.Policy, prefetch bool) *replayer {
	return &replayer{view: newFixtureView(m, capacity), pol: pol, prefetch: prefetch, scores: make([][][]float32, 1)}
}

// makeRoom asks the policy for victims until need bytes are free.
func (r *replayer) makeRoom(need int64, forPrefetch bool) (bool, error) {
	for r.view.FreeBytes() < need {
		k, ok := r.pol.Victim(r.view, need-r.view.FreeBytes(), forPrefetch)
		r.events += 2 // the victim and its eviction
		if !ok {
			if forPrefetch {
				return false, nil
			}
			return false, fmt.Errorf("%s declined a demand victim with %d bytes free, %d needed", r.pol.Name(), r.view.FreeBytes(), need)
		}
		if int(k) < 0 || int(k) >= len(r.view.state) || r.view.state[k] != sim.Resident || r.view.inUse[k] {
			return false, fmt.Errorf("%s named victim %d that is not evictable (state %d, in use %v)", r.pol.Name(), k, r.view.state[k], r.view.inUse[k])
		}
		r.victims = append(r.victims, k)
		r.view.set(k, sim.Absent)
		r.pol.Observe(sim.Event{Kind: sim.Evicted, Key: k, Layer: int(k) / r.view.model.Experts})
	}
	return true, nil
}

// run replays steps and returns every use's outcome in order.
func (r *replayer) run(steps []traces.Step) ([]outcome, error) {
	var out []outcome
	m := r.view.model
	for s := range steps {
		st := int64(s)
		r.pol.Observe(sim.Event{Kind: sim.PassStart, Layer: -1, Step: st, Tokens: 1})
		r.events++
		for l, ls := range steps[s].Layers {
			// Moment 1.
			r.la.Layer, r.la.Steps = l, append(r.la.Steps[:0], st)
			r.la.Scores = nil
			if ls.Lookahead != nil {
				r.scores[0] = ls.Lookahead
				r.la.Scores = r.scores
			}
			r.dst = r.pol.Prefetch(&r.la, r.view, r.dst[:0])
			r.events++
			if r.prefetch {
				for _, k := range r.dst {
					if r.view.state[k] != sim.Absent {
						continue
					}
					ok, err := r.makeRoom(r.view.bytesOf(k), true)
					if err != nil {
						return out, err
					}
					if !ok {
						break
					}
					r.view.set(k, sim.Loading)
					r.loads = append(r.loads, k)
					r.pol.Observe(sim.Event{Kind: sim.Admitted, Key: k, Layer: int(k) / m.Experts, Step: st, Prefetch: true})
					r.events++
				}
			}
			// Moment 2.
			r.sel = r.sel[:0]
			for _, e := range ls.Experts {
				if k := sim.MakeKey(l, int(e), m.Experts); !slices.Contains(r.sel, k) {
					r.sel = append(r.sel, k)
				}
			}
			for _, k := range r.sel {
				r.view.inUse[k] = true
			}
			for _, k := range r.sel {
				if r.view.state[k] != sim.Absent {
					out = append(out, outcome{k, true})
					continue
				}
				out = append(out, outcome{k, false})
				if _, err := r.makeRoom(r.view.bytesOf(k), false); err != nil {
					return out, fmt.Errorf("step %d layer %d: %w", s, l, err)
				}
				r.view.set(k, sim.Resident)
				r.pol.Observe(sim.Event{Kind: sim.Admitted, Key: k, Layer: l, Step: st})
				r.events++
			}
			for _, k := range r.sel {
				r.pol.Observe(sim.Event{Kind: sim.Used, Key: k, Layer: l, Step: st})
			}
			r.events += int64(len(r.sel))
			for _, k := range r.sel {
				r.view.inUse[k] = false
			}
			for _, k := range r.loads {
				if r.view.state[k] == sim.Loading {
					r.view.set(k, sim.Resident)
				}
			}
			r.loads = r.loads[:0]
		}
	}
	return out, nil
}

// mustPolicy builds a policy by name or fails the test.
func mustPolicy(t interface {
	Helper()
	Fatalf(string, ...any)
}, name string, p Params) sim.Policy {
	t.Helper()
	pol, err := New(name, p)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return pol
}

// drive applies a script of space-separated ops to pol and v, for unit tests:
//
//	a3  demand admission of key 3 (Resident)
//	p3  prefetch admission of key 3 (Resident)
//	l3  prefetch admission of key 3 that is still Loading
//	u3  Used event for key 3
//	e3  eviction of key 3
//	i3  mark key 3 InUse (the layer being computed needs it)
//	m2  moment 1 of layer 2: Prefetch with no scores
//	s0  a pass begins (PassStart event; the number is ignored)
//
// Events carry step 0; Layer is the key's layer.
func drive(t *testing.T, pol sim.Policy, v *fixtureView, script string) {
	t.Helper()
	for _, op := range strings.Fields(script) {
		n, err := strconv.Atoi(op[1:])
		if err != nil {
			t.Fatalf("bad op %q", op)
		}
		k := sim.Key(n)
		layer := n / v.model.Experts
		switch op[0] {
		case 'a', 'p', 'l':
			st := sim.Resident
			if op[0] == 'l' {
				st = sim.Loading
			}
			v.set(k, st)
			pol.Observe(sim.Event{Kind: sim.Admitted, Key: k, Layer: layer, Prefetch: op[0] != 'a'})
		case 'u':
			pol.Observe(sim.Event{Kind: sim.Used, Key: k, Layer: layer})
		case 'e':
			v.set(k, sim.Absent)
			pol.Observe(sim.Event{Kind: sim.Evicted, Key: k, Layer: layer})
		case 'i':
			v.inUse[k] = true
		case 'm':
			pol.Prefetch(&sim.Lookahead{Layer: n, Steps: []int64{0}}, v, nil)
		case 's':
			pol.Observe(sim.Event{Kind: sim.PassStart, Layer: -1, Tokens: 1})
		default:
			t.Fatalf("bad op %q", op)
		}
	}
}

// victimCase is one table row for a victim test.
type victimCase struct {
	name        string
	script      string
	forPrefetch bool
	want        sim.Key // -1: declines
}

// checkVictims runs each case on a fresh policy and view.
func checkVictims(t *testing.T, mk func() sim.Policy, m *devices.ModelSpec, capacity int64, cases []victimCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pol, v := mk(), newFixtureView(m, capacity)
			drive(t, pol, v, tc.script)
			k, ok := pol.Victim(v, 1, tc.forPrefetch)
			got := k
			if !ok {
				got = -1
			}
			if got != tc.want {
				t.Errorf("%s: victim after %q (forPrefetch=%v) = %d, want %d", pol.Name(), tc.script, tc.forPrefetch, got, tc.want)
			}
		})
	}
}
