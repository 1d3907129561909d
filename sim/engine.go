package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// UseRecord is one expert use as the engine classified it, for Config.Tap.
type UseRecord struct {
	Pass   int64 // pass number, from 0 (prefill passes included)
	Step   int64 // trace index of the first token in the pass that used it
	Phase  traces.Phase
	Layer  int
	Expert int
	State  Residency // Resident = hit, Loading = in-flight hit, Absent = miss
}

// engine is one run's mutable state. Everything it needs comes from Config,
// the steps and the policy; it reads no clock and no global randomness.
type engine struct {
	bk  Books // the cache's books; the engine is their Loader (cache.go)
	cfg Config
	m   *devices.ModelSpec
	pol Policy

	nE, nL int
	cm     computeModel
	times  timeTable
	fl     *flash
	rng    *rand.Rand

	layerBytes []int64 // bytes of one expert per layer
	regions    [][]int64

	keyReqs [][3]int32 // async read ids per key (for cancelling queued prefetches)

	mm      *mmapModel // detailed gguf-mmap fault path (mmap.go), nil when off
	gpuSync Time       // host-device sync per layer (backend gpu), 0 on the CPU
	laSync  bool       // the policy's lookahead router costs one more sync per layer

	now   Time
	phase traces.Phase // of the current pass, for the tap

	pend []int32 // scratch: union indices not yet computed
	la   Lookahead

	res       Result
	latencies []int64
}

// Run simulates decoding steps with pol on cfg's device and returns the
// result. It is a pure function of its arguments: the same inputs give the
// same Result. Prefill steps are simulated only when cfg.Prefill is set.
func Run(cfg Config, steps []traces.Step, pol Policy) (*Result, error) {
	return RunTap(cfg, steps, pol, nil)
}

// RunTap is Run with a tap that receives every expert use as it is classified
// (for per-use replay checks and detailed outputs); tap may be nil.
func RunTap(cfg Config, steps []traces.Step, pol Policy, tap func(UseRecord)) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pol == nil {
		return nil, fmt.Errorf("policy: missing")
	}
	e := newEngine(cfg, pol, tap)
	if err := e.run(steps); err != nil {
		return nil, err
	}
	return &e.res, nil
}

func newEngine(cfg Config, pol Policy, tap func(UseRecord)) *engine {
	m := cfg.Model
	nL, nE := len(m.Layers), m.Experts
	n := nL * nE
	e := &engine{
		cfg: cfg, m: m, pol: pol,
		nE: nE, nL: nL,
		cm:         newComputeModel(cfg.Device),
		fl:         newFlash(cfg.Device.Flash),
		rng:        rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		layerBytes: make([]int64, nL),
		regions:    make([][]int64, nL),
		keyReqs:    make([][3]int32, n),
	}
	e.bk.init(m, cfg.CacheBytes, pol, e)
	if tap != nil {
		e.bk.OnUse = func(k Key, st Residency) {
			tap(UseRecord{Pass: e.bk.passNo - 1, Step: e.bk.first, Phase: e.phase, Layer: int(k) / nE, Expert: int(k) % nE, State: st})
		}
	}
	e.times = newTimeTable(e)
	e.mm = newMmapModel(&cfg, nL)
	if cfg.Device.Backend == devices.BackendGPU {
		e.gpuSync = cfg.Device.GPUSyncNS
		if lr, ok := pol.(LookaheadRouter); ok && lr.UsesLookahead() {
			e.laSync = true
		}
	}
	e.fl.done = e.readDone
	for i, l := range m.Layers {
		e.layerBytes[i] = l.ExpertBytes
		for _, t := range l.Tensors {
			e.regions[i] = append(e.regions[i], t.Bytes)
		}
		if len(e.regions[i]) == 0 {
			e.regions[i] = []int64{l.ExpertBytes}
		}
	}
	e.res = Result{
		Policy: pol.Name(), Model: m.Name, Device: cfg.Device.Name, Layout: string(cfg.Layout),
		CacheBytes: cfg.CacheBytes,
	}
	return e
}

func (e *engine) run(steps []traces.Step) error {
	if err := e.checkSteps(steps); err != nil {
		return err
	}
	maxPos := 0
	for i := 0; i < len(steps); {
		s := &steps[i]
		maxPos = max(maxPos, int(s.Pos)+1)
		if s.Phase == traces.Prefill {
			j := i + 1
			for j < len(steps) && steps[j].Phase == traces.Prefill && steps[j].Seq == s.Seq && steps[j].Pass == s.Pass {
				j++
			}
			if e.cfg.Prefill {
				e.bk.Measure = false
				start := e.now
				if err := e.pass(steps, i, j); err != nil {
					return err
				}
				e.res.PrefillTokens += int64(j - i)
				e.res.PrefillNS += e.now - start
			}
			i = j
			continue
		}
		// A decode pass verifies up to SpecBlock tokens of one sequence, or
		// with SpecFromTrace the tokens the recording engine emitted in one pass.
		j := i + 1
		for j < len(steps) && steps[j].Phase == traces.Decode && steps[j].Seq == s.Seq {
			if e.cfg.SpecFromTrace {
				if steps[j].Pass != s.Pass || s.Pass < 0 {
					break
				}
			} else if j-i >= e.cfg.SpecBlock {
				break
			}
			j++
		}
		e.bk.Measure = true
		start, bytes0, reads0, stall0, load0 := e.now, e.fl.bytesRead, e.fl.reads, e.res.StallNS, e.res.LoadCPUNS
		e.fl.advance(e.now)
		busy0 := e.fl.busyNS
		if err := e.pass(steps, i, j); err != nil {
			return err
		}
		e.fl.advance(e.now)
		e.res.FlashBusyNS += e.fl.busyNS - busy0
		e.res.FlashReads += e.fl.reads - reads0
		accepted := j - i // recorded passes emitted every token they hold
		if !e.cfg.SpecFromTrace {
			accepted = e.accepted(j - i)
		}
		dt := e.now - start
		e.res.Passes++
		e.res.Tokens += int64(accepted)
		e.res.TimeNS += dt
		e.res.FlashBytes += e.fl.bytesRead - bytes0
		for range accepted {
			e.latencies = append(e.latencies, dt/int64(accepted))
		}
		if e.cfg.KeepSeries {
			e.res.Series = append(e.res.Series, PassSample{StartNS: e.res.TimeNS - dt, TimeNS: dt, StallNS: e.res.StallNS - stall0,
				LoadCPUNS: e.res.LoadCPUNS - load0, FlashBytes: e.fl.bytesRead - bytes0, Accepted: accepted})
		}
		i += accepted
	}
	e.wrapUp(maxPos)
	return nil
}

// accepted draws how many of a verified block of n tokens are emitted.
func (e *engine) accepted(n int) int {
	a := 1
	for a < n && e.rng.Float64() < e.cfg.SpecAccept {
		a++
	}
	return a
}

func (e *engine) checkSteps(steps []traces.Step) error {
	for i := range steps {
		s := &steps[i]
		if len(s.Layers) != e.nL {
			return fmt.Errorf("step %d (seq %d, pos %d): %d layers, model %s has %d", i, s.Seq, s.Pos, len(s.Layers), e.m.Name, e.nL)
		}
		for l := range s.Layers {
			if len(s.Layers[l].Experts) > e.nE {
				return fmt.Errorf("step %d layer %d: %d experts selected, model has %d", i, l, len(s.Layers[l].Experts), e.nE)
			}
			for _, x := range s.Layers[l].Experts {
				if x < 0 || int(x) >= e.nE {
					return fmt.Errorf("step %d layer %d: expert %d out of range [0,%d)", i, l, x, e.nE)
				}
			}
		}
	}
	return nil
}

func (e *engine) wrapUp(ctxTokens int) {
	if e.cfg.ContextTokens > 0 {
		ctxTokens = e.cfg.ContextTokens
	}
	e.res.DeviceBudgetBytes = DeviceBudget(e.m, e.cfg.Device, ctxTokens)
	e.bk.Settle()
	e.res.addCounts(e.bk.Counts())
	e.res.finish(e.latencies)
	e.res.Warnings = warnings(e, ctxTokens)
}
