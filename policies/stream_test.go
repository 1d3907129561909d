package policies

import (
	"reflect"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// reusingSource hands out every step in one buffer it overwrites on each
// Next, as a trace file Reader does: an engine that kept a step past Next
// would see the next one's experts.
type reusingSource struct {
	steps []traces.Step
	i     int
	buf   traces.Step
}

func (s *reusingSource) Next() bool {
	if s.i >= len(s.steps) {
		return false
	}
	traces.CopyStep(&s.buf, &s.steps[s.i])
	s.i++
	return true
}

func (s *reusingSource) Step() *traces.Step { return &s.buf }
func (s *reusingSource) Err() error         { return nil }

// withPrompts turns the first tokens of st into a prompt and starts a second
// sequence with a prompt of its own halfway, so runs have prefill passes.
func withPrompts(st []traces.Step) []traces.Step {
	half := len(st) / 2
	for i := range st {
		seq, pos := int32(0), i
		if i >= half {
			seq, pos = 1, i-half
		}
		st[i].Seq, st[i].Pos, st[i].Pass = seq, int32(pos), int32(pos)
		if pos < 6 {
			st[i].Phase, st[i].Pass = traces.Prefill, 0
		} else {
			st[i].Phase, st[i].Pass = traces.Decode, int32(pos-5)
		}
	}
	return st
}

// TestRunSourceMatchesRun: streaming the trace through a source that reuses
// its buffer gives the slice run's Result and the same classified uses, byte
// for byte, for every policy (oracle, belady and les with lookahead
// included), with and without prefill and in the gguf-mmap layout, and with
// speculative blocks of the acceptance model, whose rejected drafts are
// routed by the whole trace's statistics: streaming one without them is
// refused; with them measured over a pass through the reusing source
// (sim.DraftStats), the result is the slice run's.
func TestRunSourceMatchesRun(t *testing.T) {
	configs := map[string]func(*sim.Config){
		"decode":      func(*sim.Config) {},
		"prefill":     func(c *sim.Config) { c.Prefill = true },
		"speculative": func(c *sim.Config) { c.SpecBlock, c.SpecAccept, c.Seed = 3, 0.6, 7 },
		"mmap":        func(c *sim.Config) { c.Layout, c.CachedFirst, c.Prefill = sim.LayoutGGUFMmap, false, true },
	}
	for seed := uint64(1); seed <= 6; seed++ {
		m, st := simCase(seed)
		st = withPrompts(st)
		traces.IndexLookahead(st, m.TopK, false)
		for cname, mod := range configs {
			for _, name := range Names() {
				cfg := simConfig(m, cacheSweep(m, 3, 4)[1+int(seed)%3])
				mod(&cfg)
				p := Params{Model: m, Trace: st, Depth: 2, Prefetch: true}
				var slice, stream []sim.UseRecord
				want, err := sim.RunTap(cfg, st, mustPolicy(t, name, p), func(u sim.UseRecord) { slice = append(slice, u) })
				if err != nil {
					t.Fatalf("seed %d %s %s: %v", seed, cname, name, err)
				}
				if cname == "speculative" {
					_, err := sim.RunSource(cfg, &reusingSource{steps: st}, mustPolicy(t, name, p))
					if err == nil {
						t.Errorf("seed %d %s: streaming a speculative run without draft statistics: no refusal", seed, name)
					} else if seed == 1 {
						errgolden.Check(t, "no draft stats "+name, err)
					}
					cfg.DraftStats = sim.NewDraftStats(len(m.Layers), m.Experts)
					for src := (&reusingSource{steps: st}); src.Next(); {
						cfg.DraftStats.Add(src.Step())
					}
				}
				got, err := sim.RunSourceTap(cfg, &reusingSource{steps: st}, mustPolicy(t, name, p), func(u sim.UseRecord) { stream = append(stream, u) })
				if err != nil {
					t.Fatalf("seed %d %s %s: streaming: %v", seed, cname, name, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("seed %d %s %s: streaming result differs:\n got %+v\nwant %+v", seed, cname, name, got, want)
				}
				if !reflect.DeepEqual(stream, slice) {
					t.Errorf("seed %d %s %s: streaming classified %d uses differently from the slice run's %d", seed, cname, name, len(stream), len(slice))
				}
				if want.Uses == 0 {
					t.Errorf("seed %d %s %s: no uses: the case tests nothing", seed, cname, name)
				}
			}
		}
	}
}

// TestRunSourceBadStepMidStream: a step that does not fit the model is
// reported with its index, sequence and position when the stream reaches it.
func TestRunSourceBadStepMidStream(t *testing.T) {
	m, st := simCase(3)
	st = withPrompts(st)
	bad := len(st) - 3
	st[bad].Layers = st[bad].Layers[:len(st[bad].Layers)-1]
	if len(m.Layers) == 1 {
		st[bad].Layers = nil
	}
	_, err := sim.RunSource(simConfig(m, m.TotalExpertBytes()), &reusingSource{steps: st}, mustPolicy(t, "lru", Params{Model: m}))
	errgolden.Check(t, "bad step", err)
}

// TestFutureStreamedMatchesTrace: oracle, belady and pinned-hot built from
// a Future read through a reusing source run exactly as when built from the
// trace in memory; the Future hands back every selection, also when their
// lengths vary.
func TestFutureStreamedMatchesTrace(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		m, st := simCase(seed)
		st = withPrompts(st)
		if seed%2 == 0 {
			// Variable-length selections from the middle on.
			for i := len(st) / 3; i < len(st); i += 2 {
				ls := &st[i].Layers[i%len(m.Layers)]
				ls.Experts = ls.Experts[:len(ls.Experts)-1]
			}
		}
		fut, err := NewFuture(m, &reusingSource{steps: st})
		if err != nil {
			t.Fatal(err)
		}
		if fut.Len() != len(st) {
			t.Fatalf("seed %d: future has %d steps, trace %d", seed, fut.Len(), len(st))
		}
		for s := range st {
			if fut.Prompt(s) != (st[s].Phase == traces.Prefill) {
				t.Fatalf("seed %d step %d: prompt %v", seed, s, fut.Prompt(s))
			}
			for l := range st[s].Layers {
				got := fut.Experts(s, l)
				want := st[s].Layers[l].Experts
				if len(got) != len(want) {
					t.Fatalf("seed %d step %d layer %d: %v, want %v", seed, s, l, got, want)
				}
				for r := range got {
					if int32(got[r]) != want[r] {
						t.Fatalf("seed %d step %d layer %d: %v, want %v", seed, s, l, got, want)
					}
				}
			}
		}
		for _, name := range []string{"oracle", "belady", "pinned-hot"} {
			cfg := simConfig(m, cacheSweep(m, 1, 4)[1])
			cfg.Prefill = true
			want, err := sim.Run(cfg, st, mustPolicy(t, name, Params{Model: m, Trace: st}))
			if err != nil {
				t.Fatal(err)
			}
			got, err := sim.RunSource(cfg, &reusingSource{steps: st}, mustPolicy(t, name, Params{Model: m, Future: fut}))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("seed %d %s: from the future %+v\nfrom the trace %+v", seed, name, got, want)
			}
		}
	}
}

// TestFutureRefusesBadSteps: the streaming build names the first bad step.
func TestFutureRefusesBadSteps(t *testing.T) {
	m, st := simCase(2)
	st[5].Layers[0].Experts = []int32{int32(m.Experts)}
	_, err := NewFuture(m, &reusingSource{steps: st})
	errgolden.Check(t, "bad step", err)
	errgolden.Check(t, "empty trace", errgolden.Err(NewFuture(m, &reusingSource{})))
}
