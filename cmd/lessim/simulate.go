package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// simulateFlags are simulate's command line.
type simulateFlags struct {
	model, variant, trace    string
	device, deviceFile       string
	policy, cache, layout    string
	format, plot             string
	cachedFirst, prefill     bool
	specBlock, contextTokens int
	specAccept               float64
	seed                     uint64
	tokens                   int
	predictRecall, predictFP float64
	topN, depth, maxCand     int
	threshold, pinFraction   float64
	maxInflight              string
	noPrefetch, specTrace    bool
}

func newSimulateCmd() *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Predict decode speed for a model, device, cache size and policy",
		Long: `simulate replays a router trace (or, without --trace, a deterministic synthetic
trace of --model) through the discrete-event model of the device's flash, RAM and
compute, with the chosen expert-scheduling policy, and prints the result.`,
		Example: `  lessim simulate --model minicpm-v-4.7-35b-a3b --device iphone-18-pro-max --policy les --cache 3GiB
  lessim simulate --trace my.parquet --device ipad-pro-m4 --policy lru --cache 40% --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return simulate(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", defaultModel, "built-in model spec (see `lessim models list`); ignored with --trace, whose metadata holds the spec")
	fl.StringVar(&f.variant, "variant", "", "quant variant of --model (default: the model's default)")
	fl.StringVar(&f.trace, "trace", "", "router trace (Parquet); default: a synthetic trace of --model")
	fl.IntVar(&f.tokens, "tokens", 2000, "decode tokens of the synthetic trace")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the synthetic trace, the predictor model and speculative acceptance")
	fl.StringVar(&f.device, "device", defaultDevice, "embedded device profile (see `lessim devices list`)")
	fl.StringVar(&f.deviceFile, "device-file", "", "device profile YAML (overrides --device)")
	fl.StringVar(&f.policy, "policy", "les", "scheduling policy (see `lessim policies list`)")
	fl.StringVar(&f.cache, "cache", "auto", "expert cache size: bytes with a unit (3GiB), a percentage of all expert bytes (40%), or auto (the device's budget)")
	fl.StringVar(&f.layout, "layout", string(sim.LayoutPerExpert), "expert storage layout: per-expert or gguf-mmap (stock llama.cpp)")
	fl.BoolVar(&f.cachedFirst, "cached-first", true, "compute resident experts first while misses load (false = rank order, stock llama.cpp)")
	fl.IntVar(&f.specBlock, "spec-block", 1, "tokens verified per pass by speculative decoding (1 = off)")
	fl.Float64Var(&f.specAccept, "spec-accept", 0.7, "probability each draft token is accepted (geometric model)")
	fl.BoolVar(&f.specTrace, "spec-from-trace", false, "take speculative passes from the trace: decode tokens sharing a recorded pass were verified together and all accepted")
	fl.BoolVar(&f.prefill, "prefill", false, "simulate the trace's prefill passes first (warms the cache; never in decode metrics)")
	fl.IntVar(&f.contextTokens, "context", 0, "context tokens charged to the KV cache (0 = longest sequence in the trace)")
	fl.Float64Var(&f.predictRecall, "predict-recall", 0, "for traces without lookahead scores: a stated predictor of this recall (0 = none)")
	fl.Float64Var(&f.predictFP, "predict-fp", traces.DefaultPredictOptions().FalsePositives, "stated predictor: expected false-positive candidates per token and layer")
	fl.IntVar(&f.topN, "top-n", 0, "les: candidates per token and depth (0 = the model's top-k)")
	fl.Float64Var(&f.threshold, "threshold", 0, "les: pick candidates up to this cumulative router probability instead of --top-n (0 = off)")
	fl.IntVar(&f.maxCand, "max-candidates", 0, "les: cap on a threshold candidate set (0 = 2 × top-k)")
	fl.IntVar(&f.depth, "depth", 1, "les: layers of lookahead (the trace must carry that depth)")
	fl.StringVar(&f.maxInflight, "max-inflight", "0", "les: cap on prefetch bytes in flight (e.g. 64MiB; 0 = none)")
	fl.BoolVar(&f.noPrefetch, "no-prefetch", false, "les: disable prefetching (then les equals ondemand)")
	fl.Float64Var(&f.pinFraction, "pin-fraction", 0, "pinned-hot: fraction of the cache pinned (0 = 0.5)")
	fl.StringVar(&f.format, "format", "text", "output: text or json")
	fl.StringVar(&f.plot, "plot", "", "also draw per-token time and stalls over the run to PREFIX.png and PREFIX.svg")
	return cmd
}

// simulateOutput is simulate's JSON: the resolved inputs beside the result.
type simulateOutput struct {
	Inputs simulateInputs `json:"inputs"`
	Result *sim.Result    `json:"result"`
}

type simulateInputs struct {
	Trace       string          `json:"trace"`
	ModelName   string          `json:"model"`
	Variant     string          `json:"variant"`
	Device      *devices.Device `json:"device"`
	Policy      string          `json:"policy"`
	CacheBytes  int64           `json:"cache_bytes"`
	Layout      string          `json:"layout"`
	CachedFirst bool            `json:"cached_first"`
	SpecBlock   int             `json:"spec_block"`
	SpecAccept  float64         `json:"spec_accept"`
	Seed        uint64          `json:"seed"`
}

func simulate(cmd *cobra.Command, f *simulateFlags) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("unknown format %q (valid: json, text)", f.format)
	}
	if policies.Describe(f.policy) == "" { // an unknown name: fail before any work
		_, err := policies.New(f.policy, policies.Params{})
		return err
	}
	layout, err := sim.ParseLayout(f.layout)
	if err != nil {
		return err
	}
	dev, err := loadDevice(f.device, f.deviceFile)
	if err != nil {
		return err
	}
	var tr *traceInput
	var m *devices.ModelSpec
	if f.trace != "" {
		if tr, err = readTrace(f.trace); err != nil {
			return err
		}
		m = &tr.meta.Model
	} else {
		if m, err = devices.LookupModel(f.model, f.variant); err != nil {
			return err
		}
		o := traces.DefaultSynthOptions()
		o.Tokens, o.Seed = f.tokens, f.seed
		o.LookaheadDepth = max(o.LookaheadDepth, f.depth)
		if tr, err = synthTrace(m, o); err != nil {
			return err
		}
	}
	var extraWarn []string
	if f.predictRecall > 0 {
		po := traces.DefaultPredictOptions()
		po.Recall, po.FalsePositives, po.Depth, po.Seed = f.predictRecall, f.predictFP, max(f.depth, 1), f.seed
		meta, steps, err := traces.PredictLookahead(tr.meta, tr.steps, po)
		if err != nil {
			return err
		}
		tr.meta, tr.steps = meta, steps
		tr.label += fmt.Sprintf("; lookahead from a stated predictor (recall %.3f, %.1f false positives, seed %d)", f.predictRecall, f.predictFP, f.seed)
	} else if f.policy == "les" && !f.noPrefetch && tr.meta.LookaheadDepth == 0 {
		extraWarn = append(extraWarn, "trace has no lookahead scores, so les cannot prefetch (it behaves as ondemand): pass --predict-recall R to use a stated predictor")
	}
	// Index each lookahead vector's best candidates once, so policies need not
	// rescan every expert's score at every layer (results are unchanged).
	traces.IndexLookahead(tr.steps, indexDepth(m, f), f.threshold > 0)
	ctx := f.contextTokens
	if ctx == 0 {
		ctx = longestSequence(tr.steps)
	}
	cache, err := sim.ResolveCache(f.cache, m, dev, ctx)
	if err != nil {
		return err
	}
	maxInflight, err := devices.ParseSize(f.maxInflight)
	if err != nil && f.maxInflight != "0" {
		return fmt.Errorf("--max-inflight %q: %v", f.maxInflight, err)
	}
	p := policies.DefaultParams(m)
	p.Trace = tr.steps
	p.TopN, p.Threshold, p.MaxCandidates, p.Depth = f.topN, f.threshold, f.maxCand, f.depth
	p.MaxInflightBytes, p.PinFraction, p.Prefetch = maxInflight, f.pinFraction, !f.noPrefetch
	pol, err := policies.New(f.policy, p)
	if err != nil {
		return err
	}
	cfg := sim.Config{
		Model: m, Device: dev, CacheBytes: cache, Layout: layout, CachedFirst: f.cachedFirst,
		SpecBlock: f.specBlock, SpecAccept: f.specAccept, Seed: f.seed, Prefill: f.prefill, ContextTokens: f.contextTokens,
		KeepSeries: f.plot != "", SpecFromTrace: f.specTrace,
	}
	res, err := sim.Run(cfg, tr.steps, pol)
	if err != nil {
		return err
	}
	res.Warnings = append(res.Warnings, extraWarn...)
	out := cmd.OutOrStdout()
	if f.plot != "" {
		title := fmt.Sprintf("%s on %s, %s, cache %s: %.2f tok/s", m.Name, dev.Name, f.policy, sim.FormatBytes(cache), res.TokensPerSec)
		files, err := reports.WritePassPlot(res, title, reports.TrimPlotExt(f.plot))
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", strings.Join(files, ", "))
		res.Series = nil // drawn, not printed
	}
	if f.format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(simulateOutput{
			Inputs: simulateInputs{Trace: tr.label, ModelName: m.Name, Variant: m.Variant, Device: dev, Policy: f.policy,
				CacheBytes: cache, Layout: string(layout), CachedFirst: f.cachedFirst, SpecBlock: f.specBlock, SpecAccept: f.specAccept, Seed: f.seed},
			Result: res,
		})
	}
	h := reports.Header{
		{"model", fmt.Sprintf("%s (%s, %d MoE layers × %d experts, top-%d)", m.Name, m.Variant, len(m.Layers), m.Experts, m.TopK)},
		{"device", dev.Name},
		{"policy", f.policy},
		{"cache", fmt.Sprintf("%s (device budget %s)", sim.FormatBytes(cache), sim.FormatBytes(res.DeviceBudgetBytes))},
		{"layout", fmt.Sprintf("%s, cached-first %v", layout, f.cachedFirst)},
		{"trace", tr.label},
	}
	if f.specBlock > 1 {
		h = append(h, [2]string{"speculative", fmt.Sprintf("block %d, acceptance %.2f", f.specBlock, f.specAccept)})
	}
	return reports.WriteResult(out, h, res)
}

// longestSequence is the longest sequence in steps (positions + 1).
func longestSequence(steps []traces.Step) int {
	n := 0
	for i := range steps {
		n = max(n, int(steps[i].Pos)+1)
	}
	return n
}

// indexDepth is how many candidates per lookahead vector les will ask for:
// the threshold mode's cap, else top-n (both default from the model's top-k).
func indexDepth(m *devices.ModelSpec, f *simulateFlags) int {
	if f.threshold > 0 {
		if f.maxCand > 0 {
			return f.maxCand
		}
		return 2 * m.TopK
	}
	if f.topN > 0 {
		return f.topN
	}
	return m.TopK
}
