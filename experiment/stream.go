package experiment

import (
	"io"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// DefaultStreamAbove is Inputs.StreamAbove's default: a trace whose steps
// would take more than 1 GiB in memory streams.
const DefaultStreamAbove = 1 << 30

// streamTrace is a trace a run streams instead of loading, a trace file
// or a synthetic trace generated again for each pass over it: what is known
// of it without reading its rows, and what a first pass found.
type streamTrace struct {
	path  string       // the trace file ("" for a synthetic trace)
	synth *synthStream // the synthetic trace (nil for a file)
	steps int64

	sum    *traceSummary    // nil until a run needs it
	future *policies.Future // nil until oracle, belady or pinned-hot needs it
	drafts *sim.DraftStats  // nil until speculative decoding with the acceptance model needs them
	// draftsLA says drafts measured the lookahead recall (a run that reads
	// lookahead needs it; one that does not can use either).
	draftsLA  bool
	passSizes *traces.PassSizes // nil until --spec-accept-from-trace needs them
}

// synthStream is a synthetic trace to generate (traces.SynthSource).
type synthStream struct {
	model *devices.ModelSpec
	opt   traces.SynthOptions
}

// open starts a pass over the trace reading the columns cols keeps (a
// synthetic trace generates every column: its generator's random stream
// must not change).
func (st *streamTrace) open(cols traces.Columns) (traces.Source, io.Closer, error) {
	if y := st.synth; y != nil {
		_, src, err := traces.SynthSource(y.model, y.opt)
		return src, nopCloser{}, err
	}
	rd, err := traces.OpenColumns(st.path, cols)
	if err != nil {
		return nil, nil, err
	}
	return rd, rd, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// synthSummary is what summarize finds in the synthetic trace of o, known
// without generating it: each sequence's positions run from 0, its prompt
// tokens are prefill, and every decode token is a pass of its own.
func synthSummary(o traces.SynthOptions) *traceSummary {
	return &traceSummary{longest: o.PromptTokens + o.Tokens, prefill: max(o.Sequences, 1) * o.PromptTokens, passes: true}
}

// streams reports whether the run r of the trace file at path streams: its
// steps for r's columns (traces.MemoryBytes) would take more than
// StreamAbove, and nothing needs them in memory (a stated predictor
// rewrites the steps; a custom ReadTrace reads whole traces).
func (in *Inputs) streams(path string, r *Spec) (bool, error) {
	if in.ReadTrace != nil || r.Predictor != nil {
		return false, nil
	}
	limit := in.streamAbove()
	if limit < 0 {
		return true, nil
	}
	m, steps, err := traceFootprint(path)
	if err != nil {
		return false, err
	}
	return traces.MemoryBytes(m, steps, traceColumns(r), estimateCands(r, &m.Model)) > limit, nil
}

// synthStreams reports whether the run r streams its synthetic trace (meta,
// steps) rather than generating it into memory: held, its steps with every
// column (the generator makes them all) would take more than StreamAbove,
// and nothing needs them in memory (a stated predictor: see streams).
func (in *Inputs) synthStreams(meta traces.Meta, steps int64, r *Spec) bool {
	if r.Predictor != nil {
		return false
	}
	limit := in.streamAbove()
	return limit < 0 || traces.MemoryBytes(meta, steps, traces.Columns{}, estimateCands(r, &meta.Model)) > limit
}

// streamAbove is StreamAbove with its default.
func (in *Inputs) streamAbove() int64 {
	if in.StreamAbove == 0 {
		return DefaultStreamAbove
	}
	return in.StreamAbove
}

// streamed is the trace file at path prepared for streaming: its Meta and
// step count from the footer and the SHA-256 of its bytes; check runs
// first (not for a trace already prepared).
func (in *Inputs) streamed(path string, check func() error) (*entry, error) {
	return in.getEntry("stream\x00"+path, func() (*entry, error) {
		if err := check(); err != nil {
			return nil, err
		}
		m, steps, err := traceFootprint(path)
		if err != nil {
			return nil, err
		}
		sum, err := traces.FileSHA256(path)
		if err != nil {
			return nil, err
		}
		tr := &LoadedTrace{Meta: m, SHA256: sum}
		return &entry{tr: tr, stream: &streamTrace{path: path, steps: steps}}, nil
	})
}

// firstPassColumns are what a first pass reads: the expert column and the
// token's identity, no vector.
var firstPassColumns = traces.Columns{NoLogits: true, NoRouterInputs: true, NoLookahead: true, NoWeights: true}

// prepare makes the first pass over a streamed trace when r's run needs
// what only the rows tell: the longest sequence (cache auto without a
// context size, when the footer has no statistics), the warnings of
// --prefill and --spec-from-trace, the Future of oracle, belady and
// pinned-hot, the draft statistics of speculative decoding with the
// acceptance model, and the recorded passes an acceptance estimated from the
// trace rests on. The pass reads the expert column only (and the lookahead
// for the draft statistics' recall); what it finds is kept for later runs of
// the same trace.
func (in *Inputs) prepare(e *entry, r *Spec) (*firstPass, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := e.stream
	needFuture, needPasses := usesFuture(r.Policy.Name), r.SpecFromTrace
	needDrafts := r.Speculative != nil && !r.SpecFromTrace
	// NB: the drafts' lookahead recall only when the run reads lookahead (as
	// a loaded trace has it only then); a run that does not is unaffected by
	// it (drafts' scores come from a stream of their own).
	draftsLA := needDrafts && !traceColumns(r).NoLookahead
	needAccept := r.Speculative != nil && r.Speculative.AcceptFromTrace
	needRows := r.Prefill || needPasses || needFuture || needDrafts || needAccept
	have := st.sum != nil && (!needPasses || st.sum.passes)
	// NB: a stated context needs the longest sequence too, to be checked
	// against it; when the footer cannot tell, the engine checks it as it
	// runs, so no pass is made for it alone.
	if (r.ContextTokens > 0 || r.Cache.Size == "auto") && !have && !needRows {
		rd, err := traces.OpenColumns(st.path, firstPassColumns)
		if err != nil {
			return nil, err
		}
		p, ok := rd.MaxPos()
		rd.Close()
		if ok {
			return &firstPass{sum: &traceSummary{longest: int(p) + 1}}, nil
		}
		needRows = r.ContextTokens == 0
	}
	haveDrafts := st.drafts != nil && (st.draftsLA || !draftsLA)
	if (have || !needRows) && (!needFuture || st.future != nil) && (!needDrafts || haveDrafts) && (!needAccept || st.passSizes != nil) {
		return st.found(), nil
	}
	cols := firstPassColumns
	cols.NoLookahead = !draftsLA
	rd, c, err := st.open(cols)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if report := in.FirstPass; report != nil {
		rd = &progressSource{Source: rd, report: func(n int64) { report(n, st.steps) }}
	}
	sum := &traceSummary{passes: needPasses || st.sum != nil && st.sum.passes}
	src := &summarySource{Source: rd, sum: sum}
	if needDrafts {
		m := &e.tr.Meta.Model
		src.drafts = sim.NewDraftStats(len(m.Layers), m.Experts)
	}
	if needAccept {
		src.passSizes = &traces.PassSizes{}
	}
	if needFuture {
		if st.future, err = policies.NewFuture(&e.tr.Meta.Model, src); err != nil {
			return nil, err
		}
	} else {
		for src.Next() {
		}
		if err := src.Err(); err != nil {
			return nil, err
		}
	}
	st.sum = sum
	if needDrafts {
		st.drafts, st.draftsLA = src.drafts, draftsLA
	}
	if needAccept {
		st.passSizes = src.passSizes
	}
	return st.found(), nil
}

// firstPass is what first passes over a streamed trace found (nil: not
// looked for).
type firstPass struct {
	sum       *traceSummary
	future    *policies.Future
	drafts    *sim.DraftStats
	passSizes *traces.PassSizes
}

// found is what first passes over the trace found so far.
func (st *streamTrace) found() *firstPass {
	return &firstPass{sum: st.sum, future: st.future, drafts: st.drafts, passSizes: st.passSizes}
}

// usesFuture reports whether a policy reads the whole trace's future.
func usesFuture(policy string) bool {
	return policy == "oracle" || policy == "belady" || policy == "pinned-hot"
}

// summarySource passes a Source's steps on and summarizes them, and
// measures their draft statistics and recorded passes when drafts and
// passSizes are set.
type summarySource struct {
	traces.Source
	sum       *traceSummary
	drafts    *sim.DraftStats
	passSizes *traces.PassSizes
}

func (s *summarySource) Next() bool {
	if !s.Source.Next() {
		return false
	}
	s.sum.add(s.Source.Step())
	if s.drafts != nil {
		s.drafts.Add(s.Source.Step())
	}
	if s.passSizes != nil {
		s.passSizes.Add(s.Source.Step())
	}
	return true
}

// traceSummary is what the settings' warnings and the context size need to
// know of a trace's steps.
type traceSummary struct {
	longest int  // the longest sequence (positions + 1)
	prefill int  // prefill tokens
	passes  bool // multi is counted (a map entry per recorded pass until found)
	multi   bool // some recorded decode pass holds more than one token
	size    map[int32]int
}

// summarize is the summary of steps in memory; passes says whether to look
// for a multi-token pass.
func summarize(steps []traces.Step, passes bool) *traceSummary {
	s := &traceSummary{passes: passes}
	for i := range steps {
		s.add(&steps[i])
	}
	return s
}

// add counts one step.
func (s *traceSummary) add(st *traces.Step) {
	s.longest = max(s.longest, int(st.Pos)+1)
	if st.Phase == traces.Prefill {
		s.prefill++
		return
	}
	if !s.passes || s.multi || st.Pass < 0 {
		return
	}
	if s.size == nil {
		s.size = map[int32]int{}
	}
	s.size[st.Pass]++
	if s.size[st.Pass] > 1 {
		s.multi, s.size = true, nil
	}
}

// openStream opens the run's trace file for streaming with the columns
// it reads; for les on full lookahead vectors each step gets its
// candidate index as it passes.
func (p *Plan) openStream() (traces.Source, io.Closer, error) {
	cols := traceColumns(&p.Spec)
	cols.NoWeights = true // NB: no run reads the gate weights; a streamed step is not kept
	src, c, err := p.stream.open(cols)
	if err != nil {
		return nil, nil, err
	}
	if p.Progress != nil {
		src = &progressSource{Source: src, report: p.Progress}
	}
	if p.Meta.LookaheadTop == 0 && p.Meta.LookaheadDepth > 0 && !traceColumns(&p.Spec).NoLookahead {
		n, sums := indexDepth(&p.Spec, p.Model)
		return &indexingSource{Source: src, n: n, sums: sums}, c, nil
	}
	return src, c, nil
}

// progressEvery is how many steps a progressSource reads between reports.
const progressEvery = 4096

// progressSource passes a Source's steps on, reporting how many it has read
// every progressEvery steps and when the source ends.
type progressSource struct {
	traces.Source
	report func(steps int64)
	n      int64
}

func (s *progressSource) Next() bool {
	if !s.Source.Next() {
		s.report(s.n)
		return false
	}
	if s.n++; s.n%progressEvery == 0 {
		s.report(s.n)
	}
	return true
}

// indexingSource gives each step of a Source its candidate index
// (traces.IndexLookahead), as an in-memory trace is indexed once.
type indexingSource struct {
	traces.Source
	n    int
	sums bool
}

func (s *indexingSource) Next() bool {
	if !s.Source.Next() {
		return false
	}
	one := [1]traces.Step{*s.Source.Step()}
	// NB: the copy shares the step's Layers, so the index lands in the step.
	traces.IndexLookahead(one[:], s.n, s.sums)
	return true
}
