//go:build llamacpp

package record

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lessim/lessim/runtime/llama"
	"github.com/lessim/lessim/traces"
)

// prefillChunk bounds one prefill pass. Every prefill row is an output, so
// llama.cpp holds vocab × chunk output logits (156 MB for a 152k vocabulary);
// longer prompts are prefilled in several passes, as llama.cpp's own n_batch
// chunking does.
const prefillChunk = 256

// Summary describes a finished recording.
type Summary struct {
	Out       string
	Meta      traces.Meta
	Prompts   int
	MoELayers int
	// PrefillTokens and DecodeTokens count recorded steps by phase.
	PrefillTokens, DecodeTokens int
	Rows                        int64 // trace rows (steps × MoE layers)
	// PrefillNS and DecodeNS are the summed wall-clock times of the forward
	// passes (capture included, sampling and trace writing excluded).
	PrefillNS, DecodeNS int64
	// DecodeWallNS is the wall-clock time of the decode loops: sampling,
	// passes, building steps, lookahead scores and writing the trace.
	DecodeWallNS int64
	// DecodeCPUNS is the compute thread's CPU time in the decode passes
	// (llama.Context.PassCPUNS); DecodeProcCPUNS is the whole process's CPU
	// time (user + system) during the decode loops, so their difference is the
	// recorder's own work. Both are robust to other load on the machine.
	DecodeCPUNS, DecodeProcCPUNS int64
	// Generated are the sampled token ids per prompt, in order.
	Generated [][]int32
	// DecodePasses counts decode passes; RejectedDrafts the drafts they
	// verified and rejected; DraftNS is the drafter's wall-clock time
	// (speculative recordings only).
	DecodePasses, RejectedDrafts int
	DraftNS                      int64
	// Diverged counts prompts whose decode left the controlled drafter's
	// greedy reference.
	Diverged int
}

// DecodeTokensPerSec is the recording engine's decode speed (capture included).
func (s *Summary) DecodeTokensPerSec() float64 {
	if s.DecodeNS == 0 {
		return 0
	}
	return float64(s.DecodeTokens) / (float64(s.DecodeNS) / 1e9)
}

// Record runs the model on every prompt (one batched prefill pass, then
// opt.Tokens single-token decode passes) and writes one trace step per token
// to opt.Out, atomically (traces.Create): on error or interruption the
// temporary file is removed and whatever was at opt.Out stays as it was.
func Record(ctx context.Context, opt Options) (sum *Summary, err error) {
	if opt.Threads == 0 {
		opt.Threads = 1
	}
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	mc, err := CheckModel(opt.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer mc.File.Close()
	if err := CheckLookahead(opt.LookaheadDepth, len(mc.MoE.Layers)); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	r := &recorder{opt: opt, mc: mc, ps: opt.promptSet()}
	if opt.LookaheadDepth > 0 {
		if r.routers, err = mc.Routers(); err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
	}
	if err := r.open(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer r.close()
	if opt.CheckSpace != nil {
		if err := opt.CheckSpace(r.traceSize()); err != nil {
			return nil, err
		}
	}
	meta, err := r.meta()
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	w, err := traces.Create(opt.Out, meta)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	r.w = w
	r.sum = &Summary{Out: opt.Out, Meta: meta, Prompts: len(r.ps.Prompts), MoELayers: len(mc.MoE.Layers)}
	for i := range r.toks {
		if err := r.sequence(ctx, i); err != nil {
			return nil, fmt.Errorf("record: prompt %d: %w", i, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return r.sum, nil
}

// recorder holds one recording's state.
type recorder struct {
	opt     Options
	mc      *ModelCheck
	ps      PromptSet
	routers []Router // per MoE layer; nil without lookahead
	model   *llama.Model
	lctx    *llama.Context
	toks    [][]int32
	w       *traces.Writer
	sum     *Summary
	pass    int32
	step    traces.Step
	done    int
}

// open loads the model, checks it against the GGUF header, tokenizes the
// prompts and creates a context sized for the longest one.
func (r *recorder) open() error {
	m, err := llama.Load(r.opt.ModelPath, llama.ModelOptions{Verbose: r.opt.Verbose})
	if err != nil {
		return err
	}
	r.model = m
	info, moe := m.Info(), r.mc.MoE
	if info.Experts != moe.Experts || info.ExpertsUsed != moe.TopK || info.Embd != moe.Hidden || info.Blocks < moe.Layers[len(moe.Layers)-1].Block+1 {
		return fmt.Errorf("llama.cpp sees %d experts, top-%d, hidden %d, %d blocks; the GGUF header says %d, %d, %d, %d",
			info.Experts, info.ExpertsUsed, info.Embd, info.Blocks, moe.Experts, moe.TopK, moe.Hidden, moe.Blocks)
	}
	longest := 1
	for i, p := range r.ps.Prompts {
		t, err := m.Tokenize(p, true)
		if err != nil {
			return fmt.Errorf("prompt %d: %w", i, err)
		}
		if len(t) == 0 {
			return fmt.Errorf("prompt %d tokenizes to nothing", i)
		}
		if err := CheckContext(len(t), r.opt.Tokens); err != nil {
			return fmt.Errorf("prompt %d: %w", i, err)
		}
		longest = max(longest, len(t))
		r.toks = append(r.toks, t)
	}
	block := 1
	if r.opt.Spec != nil {
		block = r.opt.Spec.Block
	}
	r.lctx, err = m.NewContext(llama.ContextOptions{
		Threads: r.opt.Threads,
		Ctx:     longest + r.opt.Tokens,
		Batch:   max(min(longest, prefillChunk), block),
		Capture: &llama.CaptureOptions{RouterInputs: r.opt.RouterInputs || r.opt.LookaheadDepth > 0},
	})
	return err
}

// traceSize is EstimateTraceSize with the exact prompt token count, known
// once open has tokenized the prompts.
func (r *recorder) traceSize() TraceSize {
	ts := EstimateTraceSize(&r.opt, r.mc)
	ts.MinPromptSteps, ts.PromptExact = 0, true
	for _, t := range r.toks {
		ts.MinPromptSteps += int64(len(t))
	}
	return ts
}

func (r *recorder) close() {
	if r.lctx != nil {
		r.lctx.Close()
	}
	if r.model != nil {
		r.model.Close()
	}
}

// meta is the trace's self-description and provenance.
func (r *recorder) meta() (traces.Meta, error) {
	st, err := os.Stat(r.opt.ModelPath)
	if err != nil {
		return traces.Meta{}, err
	}
	sum, err := traces.FileSHA256(r.opt.ModelPath)
	if err != nil {
		return traces.Meta{}, err
	}
	spec := *r.mc.Spec
	if spec.Name == "" {
		spec.Name = filepath.Base(r.opt.ModelPath)
	}
	o := r.opt
	return traces.Meta{
		Model:           spec,
		LookaheadDepth:  o.LookaheadDepth,
		HasLogits:       o.Logits,
		HasRouterInputs: o.RouterInputs,
		Origin:          "record",
		Info: map[string]string{
			"model_file":        filepath.Base(o.ModelPath),
			"model_size":        strconv.FormatInt(st.Size(), 10),
			"model_sha256":      sum,
			"arch":              r.mc.MoE.Arch,
			"engine":            llama.Engine,
			"prompt_set":        r.ps.Name,
			"prompt_set_sha256": r.ps.Hash,
			"prompts":           strconv.Itoa(len(r.ps.Prompts)),
			"tokens_per_prompt": strconv.Itoa(o.Tokens),
			"seed":              strconv.FormatUint(o.Seed, 10),
			"sampler":           samplerName(o),
			"threads":           strconv.Itoa(o.Threads),
			"lessim_version":    lessimVersion(),
			"prefill":           fmt.Sprintf("passes of at most %d tokens, every row an output so every layer sees every token", prefillChunk),
			"compute_ns":        "decode rows only: wall ns from this layer's router logits to the next MoE layer's (last layer: to the end of the pass); 0 for prefill rows",
		},
	}, nil
}

func samplerName(o Options) string {
	if s := o.Spec; s != nil {
		d := s.Drafter
		if d == DrafterControlled {
			d = fmt.Sprintf("controlled (α %g, seed %d+prompt index)", s.Accept, s.Seed)
		}
		return fmt.Sprintf("greedy, speculative: verify passes of %d tokens, drafter %s; rejected drafts are rows of phase 2", s.Block, d)
	}
	if o.Temperature == 0 {
		return "greedy"
	}
	return fmt.Sprintf("top-k %d, temperature %g, seed+prompt index", o.TopK, o.Temperature)
}

// sequence records prompt i: its prefill pass, then opt.Tokens decode passes.
func (r *recorder) sequence(ctx context.Context, i int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := llama.NewSampler(llama.SamplerOptions{Temperature: r.opt.Temperature, TopK: r.opt.TopK, Seed: r.opt.Seed + uint64(i)})
	if err != nil {
		return err
	}
	defer s.Close()
	prompt := r.toks[i]
	r.lctx.Reset()
	for off := 0; off < len(prompt); off += prefillChunk {
		chunk := prompt[off:min(off+prefillChunk, len(prompt))]
		if err := r.lctx.DecodeAll(chunk); err != nil {
			return err
		}
		r.sum.PrefillNS += r.lctx.PassNS()
		if err := r.writePass(int32(i), off, len(chunk), len(chunk), traces.Prefill); err != nil {
			return err
		}
	}
	r.sum.PrefillTokens += len(prompt)
	total := len(r.toks) * r.opt.Tokens
	gen := make([]int32, 0, r.opt.Tokens)
	start, cpu0 := time.Now(), processCPU()
	defer func() {
		r.sum.Generated = append(r.sum.Generated, gen)
		r.sum.DecodeWallNS += time.Since(start).Nanoseconds()
		r.sum.DecodeProcCPUNS += processCPU() - cpu0
	}()
	if r.opt.Spec != nil {
		return r.speculate(ctx, i, &gen, total)
	}
	for k := range r.opt.Tokens {
		if err := ctx.Err(); err != nil {
			return err
		}
		tok := s.Sample(r.lctx)
		gen = append(gen, tok)
		pos := r.lctx.Pos()
		if err := r.lctx.Decode([]int32{tok}); err != nil {
			return fmt.Errorf("decode token %d: %w", k, err)
		}
		r.sum.DecodeNS += r.lctx.PassNS()
		r.sum.DecodeCPUNS += r.lctx.PassCPUNS()
		if err := r.writePass(int32(i), pos, 1, 1, traces.Decode); err != nil {
			return err
		}
		r.sum.DecodePasses++
		r.sum.DecodeTokens++
		r.done++
		if r.opt.Progress != nil {
			r.opt.Progress(r.done, total)
		}
	}
	return nil
}

// speculate decodes prompt i's tokens in verify passes (Options.Spec),
// writing each pass's rows: the tokens it emitted, then its rejected drafts
// (Phase Draft, at the positions after them).
func (r *recorder) speculate(ctx context.Context, i int, gen *[]int32, total int) error {
	// NB: the reference decodes on a context of its own; this one keeps the prefilled prompt.
	ref, err := r.opt.Spec.Reference(r.model, r.toks[i], r.opt.Tokens, r.opt.Threads)
	if err != nil {
		return err
	}
	dec, err := r.opt.Spec.NewDecoder(r.lctx, r.toks[i], ref, r.model.Info().Vocab, r.opt.Spec.Seed+uint64(i), r.lctx.Size(), r.opt.Threads)
	if err != nil {
		return err
	}
	defer dec.Close()
	for len(*gen) < r.opt.Tokens {
		if err := ctx.Err(); err != nil {
			return err
		}
		toks, err := dec.Next(r.opt.Tokens - len(*gen))
		if err != nil {
			return err
		}
		pos := r.lctx.Pos()
		if err := r.lctx.DecodeAll(toks); err != nil {
			return fmt.Errorf("decode pass at token %d: %w", len(*gen), err)
		}
		r.sum.DecodeNS += r.lctx.PassNS()
		r.sum.DecodeCPUNS += r.lctx.PassCPUNS()
		a, err := dec.Verify()
		if err != nil {
			return err
		}
		if err := r.writePass(int32(i), pos, len(toks), a, traces.Decode); err != nil {
			return err
		}
		*gen = append(*gen, toks[:a]...)
		r.sum.DecodePasses++
		r.sum.DecodeTokens += a
		r.sum.RejectedDrafts += len(toks) - a
		r.sum.DraftNS += dec.DraftNS()
		r.done += a
		if r.opt.Progress != nil {
			r.opt.Progress(r.done, total)
		}
	}
	if dec.Diverged() {
		r.sum.Diverged++
	}
	return nil
}

// writePass turns the capture of the last pass (rows tokens from position
// pos0) into steps and writes them: the first accepted rows of phase, the
// others rejected drafts (Phase Draft).
func (r *recorder) writePass(seq int32, pos0, rows, accepted int, phase traces.Phase) error {
	layers := r.mc.MoE.Layers
	caps := make([]llama.LayerCapture, len(layers))
	for i, l := range layers {
		lc, ok := r.lctx.Captured(l.Block)
		switch {
		case !ok:
			return fmt.Errorf("MoE layer %d (block %d): nothing captured", i, l.Block)
		case lc.Rows != rows || len(lc.TopK) != rows*r.mc.MoE.TopK || len(lc.Weights) != len(lc.TopK):
			return fmt.Errorf("MoE layer %d (block %d): captured %d logit rows, %d top-k and %d weight values for %d tokens",
				i, l.Block, lc.Rows, len(lc.TopK), len(lc.Weights), rows)
		}
		caps[i] = lc
	}
	for j := range rows {
		r.fillStep(caps, j, phase)
		r.step.Seq, r.step.Pos, r.step.Phase, r.step.Pass = seq, int32(pos0+j), phase, r.pass
		if j >= accepted {
			r.step.Phase = traces.Draft
		}
		if err := r.w.Write(&r.step); err != nil {
			return err
		}
		r.sum.Rows += int64(len(layers))
	}
	r.pass++
	return nil
}

// fillStep fills r.step (buffers reused across steps; the writer copies) with
// token row j of the captures.
func (r *recorder) fillStep(caps []llama.LayerCapture, j int, phase traces.Phase) {
	moe := r.mc.MoE
	k, nx, ne := moe.TopK, moe.Experts, moe.Hidden
	if len(r.step.Layers) != len(caps) {
		r.step.Layers = make([]traces.LayerStep, len(caps))
		for i := range r.step.Layers {
			ls := &r.step.Layers[i]
			ls.Experts, ls.Weights = make([]int32, k), make([]float32, k)
			if r.opt.Logits {
				ls.Logits = make([]float32, nx)
			}
			if r.opt.RouterInputs {
				ls.RouterInput = make([]float32, ne)
			}
			depth := min(r.opt.LookaheadDepth, len(caps)-1-i)
			for range depth {
				ls.Lookahead = append(ls.Lookahead, make([]float32, nx))
			}
		}
	}
	for i, lc := range caps {
		ls := &r.step.Layers[i]
		copy(ls.Experts, lc.TopK[j*k:])
		copy(ls.Weights, lc.Weights[j*k:])
		if ls.Logits != nil {
			copy(ls.Logits, lc.Logits[j*nx:])
		}
		var x []float32
		if lc.Input != nil {
			x = lc.Input[j*ne : (j+1)*ne]
		}
		if ls.RouterInput != nil {
			copy(ls.RouterInput, x)
		}
		for d, sc := range ls.Lookahead {
			r.routers[i+d+1].Scores(sc, x)
		}
		ls.ComputeNS = 0
		if phase == traces.Decode {
			end := r.lctx.PassNS()
			if i+1 < len(caps) {
				end = caps[i+1].ReadyNS
			}
			ls.ComputeNS = max(end-lc.ReadyNS, 0)
		}
	}
}
