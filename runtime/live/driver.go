//go:build llamacpp && linux

package live

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/runtime/llama"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/runtime/residency"
	"github.com/lessim/lessim/sim"
)

// Run decodes opt.Tokens tokens of opt.Model with opt.Policy managing an
// expert cache of opt.Cache bytes, and returns the measured result (and the
// per-token series when opt.KeepSeries is set). Bad input (a model that is not
// MoE, an unknown policy, a cache smaller than one layer's top-k) fails before
// llama.cpp loads anything.
func Run(ctx context.Context, opt Options) (*sim.Result, []TokenSample, error) {
	res, series, d, err := runKeep(ctx, opt)
	if d != nil {
		d.close()
	}
	return res, series, err
}

// runKeep is Run leaving the driver open (for tests to inspect); the caller
// closes a non-nil driver.
func runKeep(ctx context.Context, opt Options) (*sim.Result, []TokenSample, *driver, error) {
	d, err := prepare(opt)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := d.open(); err != nil {
		return nil, nil, d, err
	}
	res, series, err := d.run(ctx)
	return res, series, d, err
}

// prepare checks everything that needs no engine: options, policy, model
// header, cache size, routers.
func prepare(opt Options) (*driver, error) {
	opt.EnsureDefaults()
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if policies.Describe(opt.Policy) == "" {
		_, err := policies.New(opt.Policy, policies.Params{})
		return nil, err
	}
	mc, err := record.CheckModel(opt.Model)
	if err != nil {
		return nil, err
	}
	m := mc.Spec
	if need := int64(m.TopK) * m.MaxExpertBytes(); opt.Cache < need {
		mc.File.Close()
		return nil, fmt.Errorf("cache %s is smaller than one layer's top-%d (%s): a token could not hold its experts",
			sim.FormatBytes(opt.Cache), m.TopK, sim.FormatBytes(need))
	}
	p := policies.DefaultParams(m)
	if opt.Depth >= 0 {
		p.Depth, p.Prefetch = opt.Depth, opt.Prefetch
	}
	if opt.Policy == "les" && p.Prefetch {
		if err := policies.CheckDepthFits(p.Depth, m); err != nil {
			mc.File.Close()
			return nil, err
		}
	}
	pol, err := policies.New(opt.Policy, p)
	if err != nil {
		mc.File.Close()
		return nil, err
	}
	d := &driver{opt: opt, mc: mc, pol: pol}
	if opt.Policy == "les" && p.Prefetch && p.Depth > 0 && !opt.Stock {
		d.depth = p.Depth
		if d.routers, err = mc.Routers(); err != nil {
			mc.File.Close()
			return nil, err
		}
	}
	return d, nil
}

// driver is one live run's state.
type driver struct {
	opt Options
	mc  *record.ModelCheck
	pol sim.Policy

	model *llama.Model
	lctx  *llama.Context
	ctrl  *residency.Controller
	ev    *residency.Evictor
	lanes *residency.Lanes
	books *sim.Books
	io    *loader

	layerOf []int           // block → MoE layer, -1 for dense blocks
	routers []record.Router // per MoE layer (only when lookahead is used)
	depth   int
	la      sim.Lookahead
	scores  [][]float32 // scratch: [row*depth + d-1] → experts scores
	tokBuf  [][][]float32
	prompt  []int32
	ref     []int32 // the controlled drafter's greedy reference
	rows    int     // tokens in the current pass
	first   int64   // step of the pass's first token
	hookErr error
}

// open loads the model, finds its mapping, evicts every expert tensor and
// starts the lanes.
func (d *driver) open() error {
	var err error
	if d.model, err = llama.Load(d.opt.Model, llama.ModelOptions{}); err != nil {
		return err
	}
	moe := d.mc.MoE
	d.layerOf = make([]int, moe.Blocks)
	for i := range d.layerOf {
		d.layerOf[i] = -1
	}
	for i, l := range moe.Layers {
		if l.Block >= 0 && l.Block < len(d.layerOf) {
			d.layerOf[l.Block] = i
		}
	}
	toks, err := d.model.Tokenize(d.opt.Prompt, true)
	if err != nil {
		return err
	}
	if err := record.CheckContext(len(toks), d.opt.Tokens); err != nil {
		return err
	}
	block := 1
	if d.opt.Spec != nil {
		block = d.opt.Spec.Block
	}
	d.lctx, err = d.model.NewContext(llama.ContextOptions{
		Threads: d.opt.Threads, Ctx: len(toks) + d.opt.Tokens + 8, Batch: max(len(toks), block),
		Capture: &llama.CaptureOptions{RouterInputs: d.depth > 0, Hook: d.hook},
	})
	if err != nil {
		return err
	}
	d.prompt = toks
	// NB: before every expert is evicted: the reference decodes from RAM.
	if d.ref, err = d.opt.Spec.Reference(d.model, toks, d.opt.Tokens, d.opt.Threads); err != nil {
		return err
	}
	if d.ctrl, err = residency.Open(d.opt.Model); err != nil {
		return err
	}
	if err := d.ctrl.EvictAll(); err != nil {
		return err
	}
	d.ev = residency.NewEvictor(d.ctrl)
	if !d.opt.Stock {
		load := func(e residency.Expert, buf []byte) (int64, error) {
			d.ev.Wait(e) // an eviction of e handed over earlier must not drop this load
			return d.ctrl.Load(e, buf)
		}
		d.lanes, err = residency.NewLanes(d.opt.Lanes, d.ctrl.Layout().MaxRegion(), load)
		if err != nil {
			return err
		}
	}
	m := d.mc.Spec
	d.io = newLoader(d.ctrl, d.ev, d.lanes, len(m.Layers)*m.Experts, m.Experts, d.opt.Stock)
	d.books = sim.NewBooks(m, d.opt.Cache, d.pol, d.io)
	d.io.b = d.books
	return nil
}

// close releases everything open, in reverse order; queued loads are dropped.
func (d *driver) close() {
	defer d.mc.File.Close()
	if d.lanes != nil {
		d.lanes.Close()
	}
	if d.ev != nil {
		d.ev.Close()
	}
	if d.ctrl != nil {
		d.ctrl.Close()
	}
	if d.lctx != nil {
		d.lctx.Close()
	}
	if d.model != nil {
		d.model.Close()
	}
}

// hook is called by llama.cpp at each MoE layer's two moments.
func (d *driver) hook(kind llama.HookKind, block int) {
	if d.hookErr != nil || block < 0 || block >= len(d.layerOf) || d.layerOf[block] < 0 {
		return
	}
	l := d.layerOf[block]
	lc, ok := d.lctx.Captured(block)
	if !ok {
		d.hookErr = fmt.Errorf("MoE layer %d (block %d): nothing captured", l, block)
		return
	}
	switch kind {
	case llama.HookRouter:
		d.hookErr = d.books.Prefetch(d.lookahead(l, lc))
	case llama.HookTopK:
		d.hookErr = d.route(l, lc)
	}
}

// lookahead fills the moment-1 view of layer l: each row's scores for layers
// l+1..l+depth, router weights × the router input.
func (d *driver) lookahead(l int, lc llama.LayerCapture) *sim.Lookahead {
	la := &d.la
	la.Layer = l
	la.Steps = la.Steps[:0]
	la.Scores = la.Scores[:0]
	for r := range d.rows {
		la.Steps = append(la.Steps, d.first+int64(r))
	}
	if d.depth == 0 || lc.Input == nil {
		la.Scores = nil
		return la
	}
	moe := d.mc.MoE
	nE, hid := moe.Experts, moe.Hidden
	depth := min(d.depth, len(moe.Layers)-1-l)
	for len(d.scores) < d.rows*d.depth {
		d.scores = append(d.scores, make([]float32, nE))
	}
	for len(d.tokBuf) < d.rows {
		d.tokBuf = append(d.tokBuf, make([][]float32, 0, d.depth))
	}
	for r := range d.rows {
		x := lc.Input[r*hid : (r+1)*hid]
		tok := d.tokBuf[r][:0]
		for dd := 1; dd <= depth; dd++ {
			s := d.scores[r*d.depth+dd-1]
			d.routers[l+dd].Scores(s, x)
			tok = append(tok, s)
		}
		d.tokBuf[r] = tok
		la.Scores = append(la.Scores, tok)
	}
	return la
}

// route is moment 2 of layer l: classify, admit and load the misses, and
// wait until every selected expert is resident.
func (d *driver) route(l int, lc llama.LayerCapture) error {
	k := d.mc.MoE.TopK
	nE := int32(d.mc.MoE.Experts)
	if len(lc.TopK) < d.rows*k {
		return fmt.Errorf("MoE layer %d: %d top-k values for %d tokens × top-%d", l, len(lc.TopK), d.rows, k)
	}
	d.books.BeginLayer(l)
	for r := range d.rows {
		sel := lc.TopK[r*k : (r+1)*k]
		for _, x := range sel {
			if x < 0 || x >= nE {
				return fmt.Errorf("MoE layer %d: engine selected expert %d, model has %d", l, x, nE)
			}
		}
		d.books.Select(sel)
	}
	// Book the loads that finished since the last poll first: the
	// simulator classifies a load whose read has ended as resident (a hit),
	// so a finished load not yet collected must not count as in flight.
	d.io.Wait(false)
	if err := d.books.Classify(); err != nil {
		return err
	}
	return d.io.waitResident()
}

// pass runs one Decode over toks through the books.
func (d *driver) pass(toks []int32, first int64, all bool) error {
	d.rows, d.first = len(toks), first
	d.books.BeginPass(first, len(toks))
	var err error
	if all {
		err = d.lctx.DecodeAll(toks)
	} else {
		err = d.lctx.Decode(toks)
	}
	if d.hookErr != nil {
		return d.hookErr
	}
	if d.io.err != nil {
		return d.io.err
	}
	return err
}

// run prefills the prompt (books not counting) and measures the decode tokens.
func (d *driver) run(ctx context.Context) (*sim.Result, []TokenSample, error) {
	if err := d.pass(d.prompt, 0, true); err != nil {
		return nil, nil, fmt.Errorf("prefill: %w", err)
	}
	s, err := llama.NewSampler(llama.SamplerOptions{})
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	var dec *record.SpecDecoder
	if sp := d.opt.Spec; sp != nil {
		if dec, err = sp.NewDecoder(d.lctx, d.prompt, d.ref, d.model.Info().Vocab, sp.Seed, d.lctx.Size(), d.opt.Threads); err != nil {
			return nil, nil, err
		}
		defer dec.Close()
	}
	m := d.mc.Spec
	res := &sim.Result{Policy: d.pol.Name(), Model: m.Name, Device: "this machine (live)", Layout: "live-pread", CacheBytes: d.opt.Cache}
	if d.opt.Stock {
		res.Layout = "live-mmap"
	}
	var series []TokenSample
	var lat []int64
	var majflt, stray, drain int64
	d.books.Measure = true
	bytes0, reads0, qwait0 := d.io.bytes, d.io.reads, d.io.qwaitNS // prefill's loads are not decode's
	step := int64(len(d.prompt))
	for i := 0; i < d.opt.Tokens; {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		c0, stall0, tb0, tr0, mf0 := d.books.Counts(), d.io.stallNS, d.io.bytes, d.io.reads, majorFaults()
		// NB: a verify pass's time starts with its drafting, as the
		// simulator charges it (draft_ns before the pass).
		t0 := time.Now()
		toks, draftNS := []int32{0}, int64(0)
		if dec != nil {
			if toks, err = dec.Next(d.opt.Tokens - i); err != nil {
				return nil, nil, fmt.Errorf("draft at token %d: %w", i, err)
			}
			draftNS = dec.DraftNS()
		} else {
			toks[0] = s.Sample(d.lctx)
		}
		if err := d.pass(toks, step, dec != nil); err != nil {
			return nil, nil, fmt.Errorf("decode token %d: %w", i, err)
		}
		wall := time.Since(t0).Nanoseconds()
		mf := majorFaults() - mf0
		emitted := 1
		if dec != nil {
			if emitted, err = dec.Verify(); err != nil {
				return nil, nil, err
			}
		}
		// NB: the steps of a pass are its tokens, rejected drafts included,
		// as a recorded trace numbers them.
		step += int64(len(toks))
		c := d.books.Counts()
		ts := TokenSample{Token: i, Tokens: emitted, Drafts: len(toks) - emitted, DraftNS: draftNS, WallNS: wall,
			StallNS: d.io.stallNS - stall0, BytesRead: d.io.bytes - tb0, Reads: d.io.reads - tr0,
			Hits: c.Hits - c0.Hits, InflightHits: c.InflightHits - c0.InflightHits, Misses: c.Misses - c0.Misses,
			PrefetchLoads: c.PrefetchLoads - c0.PrefetchLoads, MajorFaults: mf}
		i += emitted
		ts.ComputeNS = ts.WallNS - ts.StallNS
		// Outside the token's timing: the evictions handed over finish (the
		// time they still needed is reported), what is resident, and in stock mode the
		// read-ahead pages of absent experts, evicted to hold the budget.
		t1 := time.Now()
		if err := d.ev.Drain(); err != nil {
			return nil, nil, err
		}
		drain += time.Since(t1).Nanoseconds()
		if ts.ResidentBytes, ts.StrayBytes, err = d.sweep(); err != nil {
			return nil, nil, err
		}
		majflt += mf
		stray += ts.StrayBytes
		res.Passes++
		res.Tokens += int64(emitted)
		res.RejectedDrafts += int64(ts.Drafts)
		res.DraftNS += draftNS
		res.TimeNS += wall
		res.StallNS += ts.StallNS
		res.PeakResidentBytes = max(res.PeakResidentBytes, ts.ResidentBytes)
		for range emitted { // NB: as the simulator: a pass's time shared by its tokens
			lat = append(lat, wall/int64(emitted))
		}
		if d.opt.KeepSeries {
			series = append(series, ts)
		}
		if d.opt.OnToken != nil {
			if err := d.opt.OnToken(ts); err != nil {
				return nil, nil, err
			}
		}
	}
	if d.lanes != nil { // loads still in flight complete (and count, as the simulator counts reads issued) before the books close
		for d.io.Wait(true) {
		}
	}
	if err := d.books.Check(); err != nil {
		return nil, nil, err
	}
	d.books.Settle()
	c := d.books.Counts()
	peak := res.PeakResidentBytes
	res.AddCounts(c)
	res.PeakResidentBytes = peak // measured (mincore), not the books' accounting
	res.StallFlashNS = res.StallNS
	res.ComputeNS = res.TimeNS - res.StallNS - res.DraftNS
	res.FlashBytes, res.FlashReads = d.io.bytes-bytes0, d.io.reads-reads0
	res.DemandQueueWaitNS = d.io.qwaitNS - qwait0
	res.Finish(lat)
	res.Source, res.Unmeasured = sim.SourceMeasured, Unmeasured(d.opt.Stock)
	res.Warnings = d.notes(majflt, stray, drain, c.PeakResidentBytes)
	if dec != nil {
		res.Unmeasured = slices.DeleteFunc(res.Unmeasured, func(f string) bool { return f == "draft_ns" || f == "rejected_drafts" })
		res.Warnings = append(res.Warnings, d.specNote(dec))
	}
	return res, series, nil
}

// sweep measures the expert bytes resident now (mincore) and, in stock mode,
// evicts the pages of experts the books hold absent (read-ahead brought them).
func (d *driver) sweep() (resident, stray int64, err error) {
	m := d.mc.Spec
	page := d.ctrl.PageSize()
	for k := range len(m.Layers) * m.Experts {
		l, x := sim.Key(k).Split(m.Experts)
		e := residency.Expert{Layer: l, Index: x}
		in, _, err := d.ctrl.ResidentPages(e)
		if err != nil {
			return 0, 0, err
		}
		if d.opt.Stock && d.books.State(sim.Key(k)) == sim.Absent && in > 2*len(m.Layers[l].Tensors) {
			stray += int64(in) * page
			if err := d.ctrl.Evict(e); err != nil {
				return 0, 0, err
			}
			in, _, _ = d.ctrl.ResidentPages(e)
		}
		resident += int64(in) * page
	}
	return resident, stray, nil
}

// notes are what a reader of a live result should know.
func (d *driver) notes(majflt, stray, drain, booksPeak int64) []string {
	w := []string{fmt.Sprintf("measured live on this machine (%d thread(s), %d I/O lane(s)); peak resident is mincore at token ends (books' peak %s)",
		d.opt.Threads, d.opt.Lanes, sim.FormatBytes(booksPeak))}
	if d.opt.Stock {
		w[0] = fmt.Sprintf("measured live on this machine (%d thread(s)), stock mmap: experts reached by page faults; peak resident is mincore at token ends (books' peak %s)",
			d.opt.Threads, sim.FormatBytes(booksPeak))
		w = append(w, "stock mode: stall, flash bytes and reads are not measured (page faults are inside the compute); see major faults",
			fmt.Sprintf("stock mode: %s of pages of experts the books held absent were found resident after tokens and evicted", sim.FormatBytes(stray)))
	}
	w = append(w, fmt.Sprintf("major page faults during decode: %d", majflt),
		fmt.Sprintf("evictions ran off the compute thread; after the tokens they needed %.2f ms more in all (outside the tokens' times)", float64(drain)/1e6))
	if n := d.ctrl.Redrops(); n > 0 {
		w = append(w, fmt.Sprintf("%d evictions found pages still resident after dropping them (the kernel skips pages it cannot take at once) and dropped them again", n))
	}
	if !d.ctrl.Populates() {
		w = append(w, "the kernel has no MADV_POPULATE_READ (Linux < 5.14): loaded experts were mapped by minor faults on the compute thread")
	}
	if d.opt.Tokens < 200 {
		w = append(w, fmt.Sprintf("run too short: %d decode tokens (p99 latency needs >= 200)", d.opt.Tokens))
	}
	return w
}

// specNote says how the run decoded speculatively.
func (d *driver) specNote(dec *record.SpecDecoder) string {
	sp := d.opt.Spec
	w := fmt.Sprintf("speculative decoding on the engine: greedy verify passes of up to %d tokens, drafter %s", sp.Block, sp.Drafter)
	if sp.Drafter == record.DrafterControlled {
		w += fmt.Sprintf(" (α %g: the target's own greedy token, from a plain greedy decode of the prompt run first, with probability α)", sp.Accept)
		if dec.Diverged() {
			w += "; the decode left that reference (batched and one-token passes rounded apart), so later drafts were not controlled"
		}
	}
	return w
}

// majorFaults is this process's major page faults so far.
func majorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Majflt
}
