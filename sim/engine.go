package sim

import (
	"errors"
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
	// layerClass and regionClass are the flash's read classes (flash.classOf)
	// of an expert's read and of its regions' reads, per layer.
	layerClass  []int32
	regionClass [][]int32

	keyReqs [][3]int32 // async read ids per key (for cancelling queued prefetches)

	// perExpert and ggufMmap say which Layout the run has (NB: looked up
	// once, not a string comparison per read).
	perExpert, ggufMmap bool

	mm      *mmapModel // detailed gguf-mmap fault path (mmap.go), nil when off
	gpuSync Time       // host-device sync per layer (backend gpu), 0 on the CPU
	// shared: the device states its cores, so compute contends with the
	// lanes for them (cores.go); predict: the lookahead router's cost per
	// layer on the CPU backend.
	shared, predict bool
	laSync          bool // the policy's lookahead router costs one more sync per layer
	// laScores: the policy runs the lookahead router, so moment 1 shows it
	// the trace's lookahead scores (NB: other policies never read them, and
	// not touching them spares a cache miss per layer and pass).
	laScores bool

	now Time
	// hi is the bitwise OR of now's values at each layer's end and after
	// each load, or -1 once an addition would have taken now past maxTime
	// (long): past maxTime or negative, the pass is refused (see pass).
	hi    Time
	phase traces.Phase // of the current pass, for the tap
	// scale is the current pass's Device.PassScale, for scaleN tokens.
	scale  float64
	scaleN int

	pend []int32 // scratch: union indices not yet computed
	la   Lookahead

	ctx       passContext    // the current pass's positions (Config.ContextCost)
	press     pressure       // memory pressure (Device.AppLimitBytes): faults > 0 when on
	drafts    *draftRouter   // routes rejected drafts (speculative decoding with the acceptance model)
	draftTime Time           // compute-thread time of one draft token
	blockBuf  []*traces.Step // scratch: a verify pass's tokens

	res       Result
	latencies []int64
}

// Run simulates decoding steps with pol on cfg's device and returns the
// result. It is a pure function of its arguments: the same inputs give the
// same Result. Prefill steps are simulated only when cfg.Prefill is set.
// It is RunSource over the slice (the same code path, so the same Result).
func Run(cfg Config, steps []traces.Step, pol Policy) (*Result, error) {
	return RunSourceTap(cfg, traces.NewSliceSource(steps), pol, nil)
}

// RunTap is Run with a tap that receives every expert use as it is classified
// (for per-use replay checks and detailed outputs); tap may be nil.
func RunTap(cfg Config, steps []traces.Step, pol Policy, tap func(UseRecord)) (*Result, error) {
	return RunSourceTap(cfg, traces.NewSliceSource(steps), pol, tap)
}

// RunSource is Run reading the trace from src one pass at a time: it holds
// only the current pass's steps (a prompt, or a speculative block and the
// drafts it may re-verify) and one step after them, plus 8 bytes per decode
// token for the exact latency percentiles, so a trace of any length runs in
// bounded memory. A step is validated as it is read; an error of src (a
// corrupt row of a trace file) ends the run with that error. The Result is
// the one Run gives for the same steps, byte for byte.
func RunSource(cfg Config, src traces.Source, pol Policy) (*Result, error) {
	return RunSourceTap(cfg, src, pol, nil)
}

// RunSourceTap is RunSource with a tap (see RunTap); tap may be nil.
func RunSourceTap(cfg Config, src traces.Source, pol Policy, tap func(UseRecord)) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pol == nil {
		return nil, fmt.Errorf("policy: missing")
	}
	if src == nil {
		return nil, fmt.Errorf("trace: missing")
	}
	e := newEngine(cfg, pol, tap)
	e.press = newPressure(&e.cfg, traceContext(&cfg, src))
	if cfg.SpecBlock > 1 && !cfg.SpecFromTrace {
		st := cfg.DraftStats
		if st == nil {
			steps, ok := traces.SliceOf(src)
			if !ok {
				return nil, errors.New("speculative decoding with the acceptance model on a streamed trace needs Config.DraftStats: rejected drafts are routed by the whole trace's statistics (measure them in a first pass with NewDraftStats)")
			}
			st = DraftStatsOf(steps, e.nL, e.nE)
		}
		if st.layers != e.nL || st.experts != e.nE {
			return nil, fmt.Errorf("draft statistics of %d layers × %d experts, model %s has %d × %d", st.layers, st.experts, e.m.Name, e.nL, e.nE)
		}
		e.drafts = newDraftRouter(st, e.m.TopK, e.cfg.Seed, e.laScores)
		if r := e.cfg.DraftReuse; r != nil {
			for l := range e.drafts.reuse {
				e.drafts.reuse[l] = *r
			}
		}
	}
	if err := e.run(newWindow(src, e.checkStep)); err != nil {
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
		perExpert:  cfg.Layout == LayoutPerExpert,
		ggufMmap:   cfg.Layout == LayoutGGUFMmap,
		scale:      1,
		scaleN:     1,
	}
	e.bk.init(m, cfg.CacheBytes, pol, e)
	if tap != nil {
		e.bk.OnUse = func(k Key, st Residency) {
			tap(UseRecord{Pass: e.bk.passNo - 1, Step: e.bk.first, Phase: e.phase, Layer: int(k) / nE, Expert: int(k) % nE, State: st})
		}
	}
	e.times = newTimeTable(e, cfg.Device)
	e.draftTime = e.cm.part(float64(cfg.DraftBytes), cfg.DraftFLOPs, 1)
	if cfg.DraftNS > 0 {
		e.draftTime = Time(cfg.DraftNS)
	}
	e.mm = newMmapModel(&cfg, nL)
	lr, ok := pol.(LookaheadRouter)
	e.laScores = ok && lr.UsesLookahead()
	if cfg.Device.Backend == devices.BackendGPU {
		e.gpuSync = cfg.Device.GPUSyncNS
		e.laSync = e.laScores
	} else {
		e.predict = e.laScores && cfg.Device.PredictNS > 0
	}
	e.fl.cont, e.fl.cpuPhase = newContention(cfg.Device)
	e.shared = cfg.Device.Cores > 0
	e.fl.eng = e
	for i, l := range m.Layers {
		e.layerBytes[i] = l.ExpertBytes
		for _, t := range l.Tensors {
			e.regions[i] = append(e.regions[i], t.Bytes)
		}
		if len(e.regions[i]) == 0 {
			e.regions[i] = []int64{l.ExpertBytes}
		}
		e.layerClass = append(e.layerClass, e.fl.classOf(l.ExpertBytes))
		cs := make([]int32, len(e.regions[i]))
		for j, b := range e.regions[i] {
			cs[j] = e.fl.classOf(b)
		}
		e.regionClass = append(e.regionClass, cs)
	}
	e.res = Result{
		Policy: pol.Name(), Model: m.Name, Device: cfg.Device.Name, Layout: string(cfg.Layout),
		CacheBytes: cfg.CacheBytes,
	}
	return e
}

func (e *engine) run(w *window) error {
	maxPos := 0
	for i := 0; ; {
		s, err := w.at(i)
		if err != nil {
			return err
		}
		if s == nil {
			break
		}
		maxPos = max(maxPos, int(s.Pos)+1)
		if c := e.cfg.ContextTokens; c > 0 && maxPos > c {
			return fmt.Errorf("step %d (seq %d, pos %d): past the context of %d tokens (ContextTokens): the KV cache holds positions 0 to %d only", i, s.Seq, s.Pos, c, c-1)
		}
		if s.Phase == traces.Draft {
			// A rejected draft outside a replayed pass (its pass began
			// before the window, or the run does not replay recorded
			// passes): it emitted nothing, so it is not run.
			i++
			w.release(i)
			continue
		}
		if s.Phase == traces.Prefill {
			j := i + 1
			for {
				t, err := w.at(j)
				if err != nil {
					return err
				}
				if t == nil || t.Phase != traces.Prefill || t.Seq != s.Seq || t.Pass != s.Pass {
					break
				}
				j++
			}
			if e.cfg.Prefill {
				e.bk.Measure = false
				start := e.now
				if err := e.pass(w.span(i, j), i); err != nil {
					return err
				}
				e.res.PrefillTokens += int64(j - i)
				e.res.PrefillNS += e.now - start
			}
			i = j
			w.release(i)
			continue
		}
		// A decode pass verifies up to SpecBlock tokens of one sequence, or
		// with SpecFromTrace the tokens the recording engine ran in one pass:
		// those it emitted, then the drafts it rejected (recorded ones).
		j, drafts := i+1, 0
		for {
			t, err := w.at(j)
			if err != nil {
				return err
			}
			if t == nil || t.Seq != s.Seq || t.Phase == traces.Prefill {
				break
			}
			if e.cfg.SpecFromTrace {
				if t.Pass != s.Pass || s.Pass < 0 || t.Phase == traces.Decode && drafts > 0 {
					break
				}
				if t.Phase == traces.Draft {
					drafts++
				}
			} else if t.Phase != traces.Decode || j-i >= e.cfg.SpecBlock {
				break
			}
			j++
		}
		e.bk.Measure = true
		start, bytes0, reads0, stall0, load0, draft0 := e.now, e.fl.bytesRead, e.fl.reads, e.res.StallNS, e.res.LoadCPUNS, e.res.DraftNS
		e.fl.advance(e.now)
		busy0 := e.fl.busyNS
		// NB: a recorded pass emitted every decode token it holds; its
		// recorded drafts are run as they were routed.
		accepted, block := j-i-drafts, w.span(i, j)
		e.res.RejectedDrafts += int64(drafts)
		if e.cfg.SpecFromTrace {
			e.draft(j - i - 1) // NB: the block's tokens after its first were drafted
		} else if j-i > 1 {
			accepted, block = e.speculate(block)
		}
		if err := e.pass(block, i); err != nil {
			return err
		}
		e.fl.advance(e.now)
		e.res.FlashBusyNS += e.fl.busyNS - busy0
		e.res.FlashReads += e.fl.reads - reads0
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
				LoadCPUNS: e.res.LoadCPUNS - load0, DraftNS: e.res.DraftNS - draft0, FlashBytes: e.fl.bytesRead - bytes0, Accepted: accepted})
		}
		i += accepted + drafts
		w.release(i)
	}
	e.wrapUp(maxPos)
	return nil
}

// speculate prepares a verify pass over span (the trace's next tokens, more
// than one) with the acceptance model: it draws how many tokens the pass
// emits, charges the drafter for the len(span)-1 drafts, and returns the
// pass's tokens, whose rejected drafts are routed as their own
// (draftRouter).
func (e *engine) speculate(span []*traces.Step) (int, []*traces.Step) {
	n := len(span)
	accepted := e.accepted(n)
	e.res.RejectedDrafts += int64(n - accepted)
	e.draft(n - 1)
	e.blockBuf = e.drafts.block(span, accepted, e.blockBuf)
	return accepted, e.blockBuf
}

// draft runs n draft tokens on the compute thread, one after another.
func (e *engine) draft(n int) {
	d := Time(n) * e.draftTime
	if n > 0 && e.draftTime > maxTime/Time(n) {
		d = maxTime + 1 // NB: the product could wrap; past maxTime, pass refuses it
	}
	e.now += e.long(d)
	e.res.DraftNS += d
}

// accepted draws how many of a verified block of n tokens are emitted.
func (e *engine) accepted(n int) int {
	a := 1
	for a < n && e.rng.Float64() < e.cfg.SpecAccept {
		a++
	}
	return a
}

// checkStep validates trace step i against the model as the window reads it.
func (e *engine) checkStep(i int, s *traces.Step) error {
	if len(s.Layers) != e.nL {
		return fmt.Errorf("step %d (seq %d, pos %d): %d layers, model %s has %d", i, s.Seq, s.Pos, len(s.Layers), e.m.Name, e.nL)
	}
	nE := uint32(e.nE)
	for l := range s.Layers {
		xs := s.Layers[l].Experts
		if len(xs) > e.nE {
			return fmt.Errorf("step %d layer %d: %d experts selected, model has %d", i, l, len(xs), e.nE)
		}
		// NB: the largest index as unsigned (a negative one is huge), one
		// branch per layer: every selection passes here.
		var hi uint32
		for _, x := range xs {
			hi = max(hi, uint32(x))
		}
		if hi >= nE {
			return e.badExpert(i, l, xs)
		}
	}
	return nil
}

// badExpert names the first out-of-range expert of step i's layer l.
func (e *engine) badExpert(i, l int, xs []int32) error {
	for _, x := range xs {
		if x < 0 || int(x) >= e.nE {
			return fmt.Errorf("step %d layer %d: expert %d out of range [0,%d)", i, l, x, e.nE)
		}
	}
	return nil
}

func (e *engine) wrapUp(ctxTokens int) {
	if e.cfg.ContextTokens > 0 {
		ctxTokens = e.cfg.ContextTokens
	}
	e.res.DeviceBudgetBytes = MemoryBudget(e.m, e.cfg.Device, ctxTokens, e.cfg.ContextCost)
	if e.cfg.Device.AppLimitBytes > 0 {
		e.res.AppFootprintBytes = e.press.footprint
	}
	e.bk.Settle()
	e.res.addCounts(e.bk.Counts())
	e.res.finish(e.latencies)
	e.res.Warnings = warnings(e, ctxTokens)
}
