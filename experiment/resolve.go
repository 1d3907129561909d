package experiment

import (
	"errors"
	"fmt"
	"sync"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// Plan is a resolved spec with everything sim.Run needs, checked and ready:
// a run can no longer fail for a reason the spec or its inputs hold.
type Plan struct {
	// Spec is the resolved spec: every default filled, the device profile
	// inline, the trace file's digest, the cache in bytes.
	Spec Spec
	// Model and Device are the resolved model spec and device.
	Model  *devices.ModelSpec
	Device *devices.Device
	// Meta and Steps are the trace as the policy and engine see it (after a
	// stated predictor; candidate-indexed). Steps are shared: do not modify.
	// Steps is nil when the run streams its trace file (Streamed).
	Meta  traces.Meta
	Steps []traces.Step
	// stream is the trace file a streamed run reads (Steps nil then).
	stream *streamTrace
	// TraceLabel says where the trace came from, for people.
	TraceLabel string
	// Params are the policy's parameters; Config the engine's. Set
	// Config.KeepSeries to keep per-pass samples (it changes no number, so
	// it is not part of the spec).
	Params policies.Params
	Config sim.Config
	// Warnings are what a reader of the result should know about the inputs;
	// Run appends them to the Result's.
	Warnings []string
	// Progress, when set, is told how many trace steps a streamed run has
	// read so far, every few thousand steps and at the end (of TraceSteps).
	// An in-memory run, a few seconds at most, does not call it.
	Progress func(steps int64)

	mu  sync.Mutex
	pol sim.Policy // built while resolving (to check it), used by the first Run
}

// Resolve checks s, loads or generates its trace and device through in, and
// returns the plan of its run. Every problem that can be known before the
// run is an error here, so a run never fails late.
func (in *Inputs) Resolve(s Spec) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	r := s.clone()
	p := &Plan{}
	if h := r.Host; h != nil { // NB: the hash is then the simulated run's
		p.Warnings = append(p.Warnings, "host: the spec was measured by the live engine on "+h.ModelFile+"; simulating it predicts that run")
		r.Host = nil
	}
	dev, err := in.resolveDevice(&r)
	if err != nil {
		return nil, err
	}
	e, err := in.resolveTrace(&r, p)
	if err != nil {
		return nil, err
	}
	m := &e.tr.Meta.Model
	if r.ContextCost {
		if m, err = m.WithContextShape(); err != nil {
			return nil, fmt.Errorf("context_cost: %w", err)
		}
	}
	// NB: after WithContextShape, which matches a built-in model by its own
	// expert bytes.
	if m, err = withExpertQuant(&r, m); err != nil {
		return nil, err
	}
	p.Model, p.Device, p.Meta = m, dev, e.tr.Meta
	if err := resolvePolicy(&r, p); err != nil {
		return nil, err
	}
	var sum *traceSummary
	var fut *policies.Future
	var drafts *sim.DraftStats
	var passSizes *traces.PassSizes
	if e.stream != nil {
		p.stream = e.stream
		fp, err := in.prepare(e, &r)
		if err != nil {
			return nil, err
		}
		sum, fut, drafts, passSizes = fp.sum, fp.future, fp.drafts, fp.passSizes
	} else {
		n, sums := indexDepth(&r, m)
		p.Steps = in.index(e, n, sums)
		sum = summarize(p.Steps, r.SpecFromTrace)
		if usesFuture(r.Policy.Name) {
			if fut, err = in.future(e, m); err != nil {
				return nil, err
			}
		}
	}
	if err := checkContext(&r, sum); err != nil {
		return nil, err
	}
	ctx := r.ContextTokens
	if ctx == 0 && sum != nil {
		ctx = sum.longest
	}
	cache, err := resolveCache(&r, m, dev, ctx, r.ContextCost)
	if err != nil {
		return nil, err
	}
	p.Warnings = append(p.Warnings, traceWarnings(&r, sum)...)
	p.Params = params(&r, m, p.Steps)
	p.Params.Future = fut
	p.Config = sim.Config{
		Model: m, Device: dev, CacheBytes: cache, Layout: sim.Layout(r.Layout), CachedFirst: r.CachedFirst, Barrier: r.Barrier,
		SpecBlock: 1, SpecFromTrace: r.SpecFromTrace, Prefill: r.Prefill, ContextTokens: r.ContextTokens,
		ContextCost:    r.ContextCost,
		MmapNeighbours: r.MmapNeighbours, PageCacheFreeRAM: r.PageCache == PageCacheFreeRAM,
	}
	if sp := r.Speculative; sp != nil {
		if !r.SpecFromTrace {
			if err := resolveAcceptance(sp, p, passSizes); err != nil {
				return nil, err
			}
			p.Config.SpecBlock, p.Config.SpecAccept, p.Config.Seed, p.Config.DraftReuse = sp.Block, sp.Accept, sp.AcceptSeed, sp.DraftReuse
			p.Config.DraftStats = drafts // NB: nil for a trace in memory, which the run measures itself
		}
		p.Config.Drafter = sp.Drafter.Kind
		p.Config.DraftBytes, p.Config.DraftFLOPs = sp.Drafter.Cost(m)
		p.Config.DraftNS = measuredDraft(sp.Drafter, dev, p)
	}
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	if p.pol, err = policies.New(r.Policy.Name, p.Params); err != nil {
		return nil, err
	}
	p.Spec = r
	return p, nil
}

// clone copies s deeply enough that resolving it never writes through to s.
func (s Spec) clone() Spec {
	r := s
	if s.Model != nil {
		m := *s.Model
		r.Model = &m
	}
	if s.Trace.Synthetic != nil {
		y := *s.Trace.Synthetic
		r.Trace.Synthetic = &y
	}
	if s.Predictor != nil {
		q := *s.Predictor
		r.Predictor = &q
	}
	if s.Policy.LES != nil {
		l := *s.Policy.LES
		r.Policy.LES = &l
	}
	if s.Policy.PinnedHot != nil {
		h := *s.Policy.PinnedHot
		r.Policy.PinnedHot = &h
	}
	if s.Host != nil {
		h := *s.Host
		r.Host = &h
	}
	if s.Speculative != nil {
		sp := *s.Speculative
		if sp.Drafter != nil {
			d := *sp.Drafter
			sp.Drafter = &d
		}
		if sp.DraftReuse != nil {
			v := *sp.DraftReuse
			sp.DraftReuse = &v
		}
		r.Speculative = &sp
	}
	return r
}

// resolveDevice loads the device unless the spec carries its profile.
func (in *Inputs) resolveDevice(r *Spec) (*devices.Device, error) {
	if r.Device.Profile != nil {
		return r.Device.Profile, nil
	}
	d, err := in.device(r.Device)
	if err != nil {
		return nil, err
	}
	if errs := d.Check(); len(errs) > 0 {
		return nil, fmt.Errorf("device %s: %w", d.Name, errors.Join(errs...))
	}
	r.Device.Profile = d
	return d, nil
}

// resolveTrace loads or generates the trace (and the stated predictor's
// scores) and fills the spec's digest and model variant.
func (in *Inputs) resolveTrace(r *Spec, p *Plan) (*entry, error) {
	var e *entry
	var err error
	if t := &r.Trace; t.Path != "" {
		stream, err := in.streams(t.Path, r)
		if err != nil {
			return nil, err
		}
		if stream {
			// NB: checked for every run, not only the first: the policy
			// decides what a streamed run keeps.
			if err := in.checkStreamMemory(t.Path, r); err != nil {
				return nil, err
			}
			e, err = in.streamed(t.Path, func() error { return nil })
		} else {
			check := func(c traces.Columns) error { return in.checkFileMemory(t.Path, c, r) }
			e, err = in.file(t.Path, traceColumns(r), check)
		}
		if err != nil {
			return nil, err
		}
		if t.SHA256 != "" && t.SHA256 != e.tr.SHA256 {
			return nil, fmt.Errorf("trace %s: its bytes changed since the spec was written (sha256 %s, spec says %s)", t.Path, e.tr.SHA256, t.SHA256)
		}
		t.SHA256 = e.tr.SHA256
		p.TraceLabel = t.Path
	} else {
		m, err := devices.LookupModel(r.Model.Name, r.Model.Variant)
		if err != nil {
			return nil, err
		}
		r.Model.Variant = m.Variant
		y := *t.Synthetic
		meta, steps := traces.Meta{Model: *m, LookaheadDepth: y.LookaheadDepth}, synthSteps(y)
		if in.synthStreams(meta, steps, r) {
			// NB: checked for every run, as a streamed file.
			est := EstimateStreamMemory(meta, steps, traceColumns(r), r.Policy.Name, estimateCands(r, m), 1)
			if err := in.checkMemory("synthetic trace", r.Policy.Name, est); err != nil {
				return nil, err
			}
			e, err = in.synthStreamed(m, y)
		} else {
			check := func() error {
				est := EstimateMemory(meta, steps, traces.Columns{}, r.Policy.Name, estimateCands(r, m))
				return in.checkMemory("synthetic trace", r.Policy.Name, est)
			}
			e, err = in.synthetic(m, y, check)
		}
		if err != nil {
			return nil, err
		}
		p.TraceLabel = fmt.Sprintf("synthetic, %d decode tokens, seed %d (skew %.2f, reuse %.3f, lookahead recall %.3f, depth %d)",
			y.Tokens*max(y.Sequences, 1), y.Seed, y.Skew, y.Reuse, y.LookaheadRecall, y.LookaheadDepth)
	}
	if q := r.Predictor; q != nil {
		if d := e.tr.Meta.LookaheadDepth; d > 0 {
			return nil, fmt.Errorf("predictor: does not apply: trace %s already carries lookahead scores (depth %d); a stated predictor is for traces without them", p.TraceLabel, d)
		}
		// NB: before traces.Predict checks it, in the words live uses.
		if err := policies.CheckDepthReach(q.Depth, len(e.tr.Meta.Model.Layers)); err != nil {
			return nil, fmt.Errorf("predictor (--depth): %w", err)
		}
		base := e.tr
		check := func() error {
			// The predicted copy: every step again, with full score vectors.
			m := base.Meta
			m.LookaheadDepth, m.LookaheadTop = max(q.Depth, 1), 0
			est := EstimateMemory(m, int64(len(base.Steps)), traces.Columns{NoLogits: true, NoRouterInputs: true}, r.Policy.Name, estimateCands(r, &m.Model))
			return in.checkMemory("predictor on "+p.TraceLabel, r.Policy.Name, est)
		}
		if e, err = in.predicted(e, *q, check); err != nil {
			return nil, err
		}
		p.TraceLabel += fmt.Sprintf("; lookahead from a stated predictor (recall %.3f, %.1f false positives, seed %d)", q.Recall, q.FalsePositives, q.Seed)
	}
	return e, nil
}

// traceColumns are the trace file columns r's run reads: never the router
// logits or inputs (no policy reads them), and lookahead scores only for les
// when it prefetches (the only policy that reads them).
func traceColumns(r *Spec) traces.Columns {
	c := traces.Columns{NoLogits: true, NoRouterInputs: true, NoLookahead: true}
	if r.Policy.Name == "les" && (r.Policy.LES == nil || !r.Policy.LES.NoPrefetch) {
		c.NoLookahead = false
	}
	return c
}

// resolvePolicy fills the policy's defaults and checks les's depth against
// the trace's lookahead.
func resolvePolicy(r *Spec, p *Plan) error {
	m := &p.Meta.Model
	switch r.Policy.Name {
	case "les":
		if r.Policy.LES == nil {
			r.Policy.LES = &LES{}
		}
		l := r.Policy.LES
		if l.NoPrefetch {
			return nil
		}
		l.Depth = max(l.Depth, 1)
		if l.Threshold > 0 {
			if l.MaxCandidates == 0 {
				l.MaxCandidates = min(2*m.TopK, m.Experts)
			}
		} else if l.TopN == 0 {
			l.TopN = m.TopK
		}
		if err := checkCandidates(l, m); err != nil {
			return err
		}
		have := p.Meta.LookaheadDepth
		switch {
		case have == 0 && l.Depth == 1:
			p.Warnings = append(p.Warnings, "trace has no lookahead scores, so les cannot prefetch (it behaves as ondemand): pass --predict-recall R to use a stated predictor")
		case p.Meta.LookaheadTop > 0 && l.Threshold > 0 && l.MaxCandidates > p.Meta.LookaheadTop:
			return fmt.Errorf("policy.les.max_candidates %d: the trace stores only its %d best lookahead candidates per layer (lookahead_top)", l.MaxCandidates, p.Meta.LookaheadTop)
		case p.Meta.LookaheadTop > 0 && l.Threshold <= 0 && l.TopN > p.Meta.LookaheadTop:
			return fmt.Errorf("policy.les.top_n %d: the trace stores only its %d best lookahead candidates per layer (lookahead_top)", l.TopN, p.Meta.LookaheadTop)
		case l.Depth > have:
			return fmt.Errorf("policy.les.depth %d: the trace carries lookahead scores to depth %d only (a stated predictor of that depth, --predict-recall, provides more for a trace without scores)", l.Depth, have)
		}
	case "pinned-hot":
		p.Warnings = append(p.Warnings, "pinned-hot ranks expert popularity on the same trace it is evaluated on (in-sample): its hit rate is optimistic for unseen text")
		if r.Policy.PinnedHot == nil {
			r.Policy.PinnedHot = &PinnedHot{}
		}
		if r.Policy.PinnedHot.PinFraction == 0 {
			r.Policy.PinnedHot.PinFraction = 0.5
		}
	}
	return nil
}

// checkCandidates refuses more lookahead candidates per layer than the
// model has experts: they would be clamped, so two specs (two hashes) would
// run the same.
func checkCandidates(l *LES, m *devices.ModelSpec) error {
	var errs []error
	if l.TopN > m.Experts {
		errs = append(errs, fmt.Errorf("policy.les.top_n %d: model %s has %d experts per layer", l.TopN, m.Name, m.Experts))
	}
	if l.MaxCandidates > m.Experts {
		errs = append(errs, fmt.Errorf("policy.les.max_candidates %d: model %s has %d experts per layer", l.MaxCandidates, m.Name, m.Experts))
	}
	return errors.Join(errs...)
}

// params are the policy's parameters for a resolved spec.
func params(r *Spec, m *devices.ModelSpec, steps []traces.Step) policies.Params {
	p := policies.DefaultParams(m)
	p.Trace = steps
	if l := r.Policy.LES; l != nil {
		p.TopN, p.Threshold, p.MaxCandidates, p.Depth = l.TopN, l.Threshold, l.MaxCandidates, l.Depth
		p.MaxInflightBytes, p.Prefetch = l.MaxInflightBytes, !l.NoPrefetch
	}
	if h := r.Policy.PinnedHot; h != nil {
		p.PinFraction = h.PinFraction
	}
	return p
}

// indexDepth is how many candidates per lookahead vector les asks for (the
// threshold mode's cap, else top-n) and whether it needs softmax sums.
func indexDepth(r *Spec, m *devices.ModelSpec) (int, bool) {
	if l := r.Policy.LES; l != nil && !l.NoPrefetch {
		if l.Threshold > 0 {
			return l.MaxCandidates, true
		}
		return l.TopN, false
	}
	return m.TopK, false
}

// resolveCache turns the cache size into bytes; size and bytes must agree.
func resolveCache(r *Spec, m *devices.ModelSpec, d *devices.Device, ctx int, contextCost bool) (int64, error) {
	c := &r.Cache
	if c.Size == "" {
		return c.Bytes, nil
	}
	var auto func() (int64, error)
	if d != nil {
		auto = func() (int64, error) {
			b := sim.MemoryBudget(m, d, ctx, contextCost)
			if b <= 0 {
				return 0, fmt.Errorf("cache auto: device %s leaves no RAM for experts (budget %s)", d.Name, sim.FormatBytes(b))
			}
			return b, nil
		}
	}
	b, err := devices.ResolveCache(c.Size, m, auto)
	if err != nil {
		return 0, err
	}
	if c.Bytes != 0 && c.Bytes != b {
		return 0, fmt.Errorf("cache: size %q is %d bytes here but cache.bytes says %d (the device, model or context changed?): remove one of them", c.Size, b, c.Bytes)
	}
	c.Bytes = b
	return b, nil
}

// resolveAcceptance fills sp.Accept from the trace's recorded decode passes
// when sp.AcceptFromTrace is set, and says so in the plan's warnings. A
// streamed trace's passes were counted by its first pass (passSizes); one
// in memory is read from p.Steps.
func resolveAcceptance(sp *Speculative, p *Plan, passSizes *traces.PassSizes) error {
	if !sp.AcceptFromTrace {
		return nil
	}
	var est traces.Acceptance
	var err error
	if passSizes != nil { // a streamed trace's first pass
		est, err = passSizes.Acceptance(sp.Block)
	} else {
		est, err = traces.EstimateAcceptance(p.Steps, sp.Block)
	}
	if err != nil {
		return fmt.Errorf("speculative.accept_from_trace: %w", err)
	}
	sp.Accept = est.Accept
	p.Warnings = append(p.Warnings, fmt.Sprintf("speculative acceptance %.4g estimated from the trace's %d recorded decode passes (%d drafts accepted, %d rejections) for blocks of %d",
		est.Accept, est.Passes, est.Accepted, est.Rejections, sp.Block))
	return nil
}

// checkContext refuses a stated context shorter than the trace's longest
// sequence: the KV cache is sized for the context from the first token
// (docs/model.md), so a shorter one cannot hold the positions the run
// decodes, and the memory it charges would be too small. sum is nil when
// the longest sequence is not known before the run (a streamed trace file
// without position statistics): the engine then refuses the first step
// past the context (sim.Config.ContextTokens).
func checkContext(r *Spec, sum *traceSummary) error {
	if c := r.ContextTokens; c > 0 && sum != nil && sum.longest > c {
		return fmt.Errorf("context_tokens (--context) %d: the trace's longest sequence holds %d tokens (positions 0 to %d, prompt and decode): the KV cache must hold every position; raise it to at least %d, or omit it for the longest sequence",
			c, sum.longest, sum.longest-1, sum.longest)
	}
	return nil
}

// traceWarnings names settings the trace gives nothing to work on.
// sum is nil when neither setting is on (nothing to look for).
func traceWarnings(r *Spec, sum *traceSummary) []string {
	var w []string
	if sum == nil {
		return nil
	}
	prefill, multi := sum.prefill, sum.multi
	if r.Prefill && prefill == 0 {
		w = append(w, "prefill: the trace has no prefill tokens, so --prefill changes nothing")
	}
	if r.SpecFromTrace && !multi {
		w = append(w, "spec-from-trace: no decode pass of the trace verified more than one token, so there is no speculative decoding to replay")
	}
	return w
}

// measuredDraft is the time per draft token dev measured for a model
// drafter reading the same weight bytes (compute.draft_token), or 0: the
// drafter is charged from its bytes and FLOPs, with a warning when the
// profile measured another draft model.
func measuredDraft(d *Drafter, dev *devices.Device, p *Plan) int64 {
	if d.Kind != DrafterModel || dev.DraftTokenNS == 0 {
		return 0
	}
	if !d.measuredOn(dev) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the device's measured draft token (compute.draft_token) is for a draft model of %s per token, this drafter reads %s: charged from its weights",
			sim.FormatBytes(dev.DraftBytes), sim.FormatBytes(d.Bytes)))
		return 0
	}
	return dev.DraftTokenNS
}

// measuredOn reports whether dev measured this drafter: a model drafter of
// the bytes its compute.draft_token was measured with.
func (d *Drafter) measuredOn(dev *devices.Device) bool {
	return d.Kind == DrafterModel && dev.DraftTokenNS > 0 && dev.DraftBytes == d.Bytes
}
