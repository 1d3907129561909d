package record

import (
	"errors"
	"fmt"
)

// Options configures Record. Start from DefaultOptions: some defaults (Logits,
// LookaheadDepth) are not the zero value.
type Options struct {
	ModelPath string
	// Prompts to record, one sequence each; nil means the built-in set (Builtin).
	Prompts []string
	// PromptSet names Prompts for provenance (e.g. the prompt file's name);
	// default "inline" when Prompts is set.
	PromptSet string
	// Tokens is the number of decode tokens generated per prompt (> 0).
	// Generation does not stop at end-of-sequence tokens, so every prompt
	// contributes exactly Tokens decode steps.
	Tokens int
	// LookaheadDepth is how many next MoE layers' router scores each row
	// carries (0 = none). Scores for layers past the last MoE layer are null.
	LookaheadDepth int
	RouterInputs   bool // store each layer's router input (hidden floats per row)
	Logits         bool // store each layer's router logits (experts floats per row)
	// Seed seeds the sampler; prompt i uses Seed+i. Temperature and TopK
	// shape it (defaults 0.8 and 40); Temperature 0 decodes greedily.
	Seed        uint64
	Temperature float32
	TopK        int
	Threads     int    // compute threads (default 1)
	Out         string // trace file (.parquet)
	// Progress, when set, is called after every decoded token with the tokens
	// done and the total (prompts × Tokens).
	Progress func(done, total int)
	// Verbose forwards llama.cpp's log to stderr.
	Verbose bool
	// Spec, when set, decodes speculatively (greedy, Temperature 0): every
	// verify pass is written, its rejected drafts as Phase Draft rows.
	Spec *Speculative
	// CheckSpace, when set, is called once the prompts are tokenized and
	// before the trace file is created, with the trace's size inputs at the
	// exact prompt token count (TraceSize.PromptExact); its error stops the
	// recording before it decodes. A caller checks the free space with it
	// (before the model loads it knows only a lower bound of the prompt
	// tokens, EstimateTraceSize).
	CheckSpace func(TraceSize) error
}

// DefaultOptions are the recorder defaults: 64 decode tokens per prompt,
// lookahead depth 1, logits on, router inputs off, seed 1, top-k 40 at
// temperature 0.8, 1 thread, built-in prompts.
func DefaultOptions() Options {
	return Options{Tokens: 64, LookaheadDepth: 1, Logits: true, Seed: 1, Temperature: 0.8, TopK: 40, Threads: 1}
}

// maxLookahead bounds LookaheadDepth; the published measurements stop at a few layers.
const maxLookahead = 8

// Validate reports every problem with the options at once. It does not touch
// the model file (see CheckModel).
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.ModelPath == "" {
		bad("no model: set the GGUF model path")
	}
	if o.Out == "" {
		bad("no output: set the trace file path")
	}
	if err := CheckDecodeTokens(o.Tokens); err != nil {
		errs = append(errs, err)
	}
	if o.LookaheadDepth < 0 || o.LookaheadDepth > maxLookahead {
		bad("lookahead depth %d: want 0..%d", o.LookaheadDepth, maxLookahead)
	}
	if o.Threads != 0 { // 0 = the default, 1
		if err := CheckThreads(o.Threads); err != nil {
			errs = append(errs, err)
		}
	}
	if err := CheckTemperature(float64(o.Temperature)); err != nil {
		errs = append(errs, err)
	}
	if o.TopK < 0 {
		bad("top-k %d: want >= 0 (0 = no top-k cut)", o.TopK)
	}
	if o.Spec != nil {
		if err := o.Spec.Validate(); err != nil {
			errs = append(errs, err)
		}
		if o.Temperature != 0 {
			bad("temperature %g: speculative decoding verifies greedily (temperature 0)", o.Temperature)
		}
	}
	if o.Prompts != nil && len(o.Prompts) == 0 {
		bad("prompts: empty list (nil means the built-in set)")
	}
	for i, p := range o.Prompts {
		if p == "" {
			bad("prompt %d is empty", i)
		}
	}
	return errors.Join(errs...)
}
