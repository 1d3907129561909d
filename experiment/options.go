package experiment

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/numtext"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
)

// Option is one named setting of a run: simulate's flag of the same name, and
// the name sweeps and ablations use for an axis. Its rules are data here, so
// every command refuses a setting that does not apply, for the same reason.
type Option struct {
	Name    string // flag name, e.g. "top-n"
	Kind    Kind   // how its value is written
	Default string // the value DefaultSpec has, as written
	Usage   string // one line of help

	// names lists the valid values of an option that names something
	// (a policy, a layout); nil for free-form values. Apply refuses others.
	names   func() []string
	apply   func(s *Spec, v any) error
	applies func(s *Spec, set func(name string) bool) string // "" = applies, else why not
}

// Kind is how an option's value is written.
type Kind string

// Kinds of option values. Numbers must be finite: NaN and Inf are refused
// when parsed.
const (
	KindString Kind = "string"
	KindInt    Kind = "int"
	KindUint   Kind = "uint"
	KindFloat  Kind = "float"
	KindBool   Kind = "bool"
	KindSize   Kind = "size" // bytes with a unit, e.g. 64MiB; "0" is zero
)

// Parse checks v for the option's kind and returns its value.
func (o *Option) Parse(v string) (any, error) {
	switch o.Kind {
	case KindInt:
		n, err := numtext.Int(v, strconv.IntSize)
		if err != nil {
			return nil, err
		}
		return int(n), nil
	case KindUint:
		n, err := numtext.Uint(v, 64)
		if err != nil {
			return nil, err
		}
		return n, nil
	case KindFloat:
		f, err := numtext.Float(v, 64)
		if err != nil {
			return nil, err
		}
		return f, nil
	case KindBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", v)
		}
		return b, nil
	case KindString:
		if strings.TrimSpace(v) == "" {
			return nil, errors.New("empty value: give one, or omit the option for its default")
		}
	case KindSize:
		if strings.TrimSpace(v) == "0" {
			return int64(0), nil
		}
		n, err := devices.ParseSize(v)
		if err == nil && n < 0 {
			err = fmt.Errorf("%q is negative", v)
		}
		return n, err
	}
	return v, nil
}

// Options lists every option in the order FromOptions applies them (an
// option's applicability may depend on those before it).
func Options() []Option { return options }

// LookupOption is the option called name (nil when none).
func LookupOption(name string) *Option {
	for i := range options {
		if options[i].Name == name {
			return &options[i]
		}
	}
	return nil
}

// FromOptions builds a spec from DefaultSpec and named option values as
// written (e.g. {"policy": "lru", "cache": "3GiB"}). Only the options present
// are applied ("set by the user", whatever their value); each must apply to
// the spec they build, or the error says why not. Every problem is reported
// at once. The spec is not yet Validated.
func FromOptions(values map[string]string) (Spec, error) {
	s := DefaultSpec()
	err := Apply(&s, values)
	return s, err
}

// Apply sets named option values on s (see FromOptions). Every value is
// parsed first: an unknown option, a malformed number or an unknown name
// is reported before any option is judged inapplicable, since that verdict
// rests on the values before it (--top-n with --policy lru2 is a typo of a
// policy, not a les option given to another one).
func Apply(s *Spec, values map[string]string) error {
	parsed, err := parseValues(values)
	if err != nil {
		return err
	}
	var errs []error
	set := func(name string) bool { _, ok := values[name]; return ok }
	for i := range options {
		o := &options[i]
		v, ok := parsed[o.Name]
		if !ok {
			continue
		}
		if why := o.applies(s, set); why != "" {
			errs = append(errs, &InapplicableError{Option: o.Name, Why: why})
		} else if err := o.apply(s, v); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s: %v", o.Name, values[o.Name], err))
		}
	}
	return errors.Join(errs...)
}

// InapplicableError is an option given where it does not apply (Apply), with
// the reason.
type InapplicableError struct{ Option, Why string }

func (e *InapplicableError) Error() string { return "--" + e.Option + " does not apply: " + e.Why }

// CheckValue checks raw as the value of option name (its syntax and, for an
// option of names such as --drafter, that it is one of them) and words a
// problem as FromOptions does ("--drafter eagle: unknown drafter (valid:
// ...)"), for a caller that takes the option as its own setting.
func CheckValue(name, raw string) error {
	_, err := parseValues(map[string]string{name: raw})
	return err
}

// parseValues parses every value for its option, reporting every unknown
// option, malformed value and unknown name at once, in option order.
func parseValues(values map[string]string) (map[string]any, error) {
	var errs []error
	for name := range values {
		if LookupOption(name) == nil {
			errs = append(errs, fmt.Errorf("unknown option %q", name))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	parsed := make(map[string]any, len(values))
	for i := range options {
		o := &options[i]
		raw, ok := values[o.Name]
		if !ok {
			continue
		}
		v, err := o.Parse(raw)
		if err == nil && o.names != nil && !slices.Contains(o.names(), raw) {
			err = fmt.Errorf("unknown %s (valid: %s)", o.Name, strings.Join(o.names(), ", "))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s %s: %v", o.Name, raw, err))
			continue
		}
		parsed[o.Name] = v
	}
	return parsed, errors.Join(errs...)
}

func always(*Spec, func(string) bool) string { return "" }

func les(s *Spec) *LES {
	if s.Policy.LES == nil {
		s.Policy.LES = &LES{}
	}
	return s.Policy.LES
}

// lesOnly applies to les with prefetch on.
func lesOnly(s *Spec, _ func(string) bool) string {
	switch {
	case s.Policy.Name != "les":
		return fmt.Sprintf("it is a les option and the policy is %s", s.Policy.Name)
	case s.Policy.LES != nil && s.Policy.LES.NoPrefetch:
		return "--no-prefetch is set, so les prefetches nothing"
	}
	return ""
}

// readsLookahead applies when the run reads lookahead scores: les with
// prefetch on, the only policy that does (traceColumns).
func readsLookahead(s *Spec) string {
	switch {
	case s.Policy.Name != "les":
		return fmt.Sprintf("it states lookahead scores, which only les reads, and the policy is %s", s.Policy.Name)
	case s.Policy.LES != nil && s.Policy.LES.NoPrefetch:
		return "--no-prefetch is set, so les reads no lookahead scores"
	}
	return ""
}

func syntheticOnly(what string) func(*Spec, func(string) bool) string {
	return func(s *Spec, _ func(string) bool) string {
		if s.Trace.Path != "" {
			return fmt.Sprintf("with --trace %s, %s", s.Trace.Path, what)
		}
		return ""
	}
}

var options = []Option{
	{Name: "trace", Kind: KindString, Usage: "router trace (Parquet); default: a synthetic trace of --model",
		apply: func(s *Spec, v any) error {
			if v.(string) == "" {
				return errors.New("empty path")
			}
			s.Trace, s.Model = Trace{Path: v.(string)}, nil
			return nil
		}, applies: always},
	{Name: "model", Kind: KindString, Default: DefaultModel, Usage: "built-in model spec of the synthetic trace (see: lessim models list)",
		apply:   func(s *Spec, v any) error { s.Model.Name = v.(string); return nil },
		applies: syntheticOnly("the trace's metadata holds the model")},
	{Name: "variant", Kind: KindString, Usage: "quant variant of --model (default: the model's default)",
		apply:   func(s *Spec, v any) error { s.Model.Variant = v.(string); return nil },
		applies: syntheticOnly("the trace's metadata holds the model and its quant variant")},
	{Name: "expert-quant", Kind: KindString, Usage: "re-quantize the model's routed experts to this ggml type (e.g. Q3_K): the same routing with each expert's bytes in that type (default: the model's own types)",
		apply: func(s *Spec, v any) error {
			q, err := devices.ParseQuantType(v.(string))
			if err != nil {
				return err
			}
			s.ExpertQuant = string(q)
			return nil
		}, applies: always},
	{Name: "tokens", Kind: KindInt, Default: "2000", Usage: "decode tokens of the synthetic trace",
		apply:   func(s *Spec, v any) error { s.Trace.Synthetic.Tokens = v.(int); return nil },
		applies: syntheticOnly("the trace file has its own tokens")},
	{Name: "device", Kind: KindString, Default: DefaultDevice, Usage: "embedded device profile (see: lessim devices list)",
		apply: func(s *Spec, v any) error { s.Device = Device{Name: v.(string)}; return nil }, applies: always},
	{Name: "device-file", Kind: KindString, Usage: "device profile YAML (instead of --device)",
		apply: func(s *Spec, v any) error { s.Device = Device{File: v.(string)}; return nil },
		applies: func(_ *Spec, set func(string) bool) string {
			if set("device") {
				return "--device and --device-file exclude each other"
			}
			return ""
		}},
	{Name: "policy", Kind: KindString, Default: DefaultPolicy, Usage: "scheduling policy (see: lessim policies list)", names: policies.Names,
		apply: func(s *Spec, v any) error { s.Policy = Policy{Name: v.(string)}; return nil }, applies: always},
	{Name: "no-prefetch", Kind: KindBool, Default: "false", Usage: "les: disable prefetching (then les equals ondemand)",
		apply: func(s *Spec, v any) error { les(s).NoPrefetch = v.(bool); return nil },
		applies: func(s *Spec, _ func(string) bool) string {
			switch s.Policy.Name {
			case "les":
				return ""
			case "oracle":
				return "oracle always prefetches the true next-layer experts (Belady eviction plus perfect one-layer-ahead prefetch: a hit-rate reference, not a throughput bound)"
			}
			return fmt.Sprintf("it is a les option and policy %s never prefetches", s.Policy.Name)
		}},
	{Name: "threshold", Kind: KindFloat, Default: "0", Usage: "les: pick candidates up to this cumulative router probability instead of --top-n (0 = off)",
		apply: func(s *Spec, v any) error { les(s).Threshold = v.(float64); return nil }, applies: lesOnly},
	{Name: "top-n", Kind: KindInt, Default: "0", Usage: "les: candidates per token and depth (0 = the model's top-k)",
		apply: func(s *Spec, v any) error { les(s).TopN = v.(int); return nil },
		applies: func(s *Spec, set func(string) bool) string {
			if why := lesOnly(s, set); why != "" {
				return why
			}
			if s.Policy.LES != nil && s.Policy.LES.Threshold > 0 {
				return "--threshold picks candidates by cumulative probability (cap them with --max-candidates)"
			}
			return ""
		}},
	{Name: "max-candidates", Kind: KindInt, Default: "0", Usage: "les: cap on a --threshold candidate set (0 = 2 × top-k)",
		apply: func(s *Spec, v any) error { les(s).MaxCandidates = v.(int); return nil },
		applies: func(s *Spec, set func(string) bool) string {
			if why := lesOnly(s, set); why != "" {
				return why
			}
			if s.Policy.LES == nil || s.Policy.LES.Threshold == 0 {
				return "it caps a --threshold candidate set (without --threshold, les takes --top-n)"
			}
			return ""
		}},
	{Name: "depth", Kind: KindInt, Default: "1", Usage: "les: layers of lookahead (the trace, or the stated predictor, must provide that depth)",
		apply: func(s *Spec, v any) error {
			d := v.(int)
			if err := policies.CheckDepth(d); err != nil {
				return err
			}
			les(s).Depth = d
			if y := s.Trace.Synthetic; y != nil {
				y.LookaheadDepth = max(y.LookaheadDepth, d)
			}
			return nil
		}, applies: lesOnly},
	{Name: "max-inflight", Kind: KindSize, Default: "0", Usage: "les: cap on prefetch bytes in flight (e.g. 64MiB; 0 = none)",
		apply: func(s *Spec, v any) error { les(s).MaxInflightBytes = v.(int64); return nil }, applies: lesOnly},
	{Name: "predict-recall", Kind: KindFloat, Default: "0", Usage: "for trace files without lookahead scores: a stated predictor of this recall (0 = none)",
		apply: func(s *Spec, v any) error {
			s.Predictor = nil
			if r := v.(float64); r != 0 {
				p := DefaultPredictor()
				p.Recall = r
				if l := s.Policy.LES; l != nil && l.Depth > 0 {
					p.Depth = l.Depth // NB: --depth is applied before
				}
				s.Predictor = &p
			}
			return nil
		},
		applies: func(s *Spec, set func(string) bool) string {
			if s.Trace.Path == "" {
				return "the synthetic trace carries its own lookahead scores; a stated predictor is for trace files without them"
			}
			return readsLookahead(s)
		}},
	{Name: "predict-fp", Kind: KindFloat, Default: "1.5", Usage: "stated predictor: expected false-positive candidates per token and layer",
		apply: func(s *Spec, v any) error { s.Predictor.FalsePositives = v.(float64); return nil },
		applies: func(s *Spec, _ func(string) bool) string {
			if s.Predictor == nil {
				return "it is a setting of the stated predictor, which --predict-recall R (R > 0) turns on"
			}
			return ""
		}},
	{Name: "pin-fraction", Kind: KindFloat, Default: "0.5", Usage: "pinned-hot: fraction of the cache pinned, in (0, 1]",
		apply: func(s *Spec, v any) error {
			f := v.(float64)
			if f <= 0 || f > 1 {
				return errors.New("must be in (0, 1] (pinning nothing is lru)")
			}
			s.Policy.PinnedHot = &PinnedHot{PinFraction: f}
			return nil
		},
		applies: func(s *Spec, _ func(string) bool) string {
			if s.Policy.Name != "pinned-hot" {
				return fmt.Sprintf("it is a pinned-hot option and the policy is %s", s.Policy.Name)
			}
			return ""
		}},
	{Name: "cache", Kind: KindString, Default: DefaultCache, Usage: "expert cache size: bytes with a unit (3GiB), a percentage of all expert bytes (40%), or auto (the device's budget)",
		apply: func(s *Spec, v any) error { s.Cache = Cache{Size: v.(string)}; return nil }, applies: always},
	{Name: "layout", Kind: KindString, Default: DefaultLayout, Usage: "expert storage layout: per-expert or gguf-mmap (stock llama.cpp)", names: sim.Layouts,
		apply: func(s *Spec, v any) error { s.Layout = v.(string); return nil }, applies: always},
	{Name: "cached-first", Kind: KindBool, Default: "true", Usage: "compute resident experts first while misses load (false = rank order, stock llama.cpp)",
		apply: func(s *Spec, v any) error { s.CachedFirst = v.(bool); return nil }, applies: always},
	{Name: "barrier", Kind: KindBool, Default: "false", Usage: "a layer's experts compute only after all of them are resident (the live engine's order; implies --cached-first=false)",
		apply: func(s *Spec, v any) error {
			if s.Barrier = v.(bool); s.Barrier {
				s.CachedFirst = false
			}
			return nil
		},
		applies: func(s *Spec, set func(string) bool) string {
			switch {
			case s.Layout == "gguf-mmap":
				return "with gguf-mmap each expert faults in as it computes"
			case set("cached-first") && s.CachedFirst:
				return "cached-first computes resident experts while misses load"
			}
			return ""
		}},
	{Name: "page-cache", Kind: KindString, Default: "budget", Usage: "gguf-mmap: where mapped experts are cached: budget (--cache) or free-ram (the kernel's page cache, sized by the device's free RAM, LRU order)",
		names: func() []string { return []string{"budget", PageCacheFreeRAM} },
		apply: func(s *Spec, v any) error {
			if v.(string) == "budget" {
				s.PageCache = ""
				return nil
			}
			if s.Cache.Size != DefaultCache {
				return fmt.Errorf("the page cache is whatever RAM is free (the device's budget), so --cache %s does not apply: drop it", s.Cache.Size)
			}
			s.PageCache = PageCacheFreeRAM
			return nil
		}, applies: mmapOnly},
	{Name: "mmap-neighbours", Kind: KindBool, Default: "false", Usage: "gguf-mmap: bytes a fault's read-around and read-ahead bring in beyond the expert stay resident (neighbours can hit)",
		apply: func(s *Spec, v any) error { s.MmapNeighbours = v.(bool); return nil }, applies: mmapOnly},
	{Name: "spec-from-trace", Kind: KindBool, Default: "false", Usage: "take speculative passes from the trace: decode tokens sharing a recorded pass were verified together and all accepted",
		apply:   func(s *Spec, v any) error { s.SpecFromTrace = v.(bool); return nil },
		applies: fileOnly("a synthetic trace has one decode token per pass")},
	{Name: "spec-block", Kind: KindInt, Default: "1", Usage: "tokens verified per pass by speculative decoding (1 = off)",
		apply: func(s *Spec, v any) error {
			n := v.(int)
			errRange := fmt.Errorf("must be in [1, %d] (1 = off; drafters propose a few tokens per pass)", MaxSpecBlock)
			if n < 1 {
				return errRange
			}
			s.Speculative = nil
			if n > 1 {
				// NB: also past MaxSpecBlock, refused below: speculative
				// decoding is still what was asked for, so its options
				// given with it are not called inapplicable too.
				sp := DefaultSpeculative()
				sp.Block = n
				s.Speculative = &sp
			}
			if n > MaxSpecBlock {
				return errRange
			}
			return nil
		},
		applies: func(s *Spec, _ func(string) bool) string {
			if s.SpecFromTrace {
				return "with --spec-from-trace the passes come from the trace"
			}
			return ""
		}},
	{Name: "spec-accept", Kind: KindFloat, Default: "0.7", Usage: "probability each draft token is accepted (geometric model)",
		apply: func(s *Spec, v any) error { s.Speculative.Accept = v.(float64); return nil },
		applies: func(s *Spec, set func(string) bool) string {
			if set("spec-accept-from-trace") {
				return "--spec-accept-from-trace estimates it from the trace's recorded passes"
			}
			return speculativeOnly(s, set)
		}},
	{Name: "spec-accept-from-trace", Kind: KindBool, Default: "false", Usage: "estimate the acceptance from the trace file's recorded decode passes (for blocks of --spec-block)",
		apply: func(s *Spec, v any) error { s.Speculative.AcceptFromTrace = v.(bool); return nil },
		applies: func(s *Spec, set func(string) bool) string {
			if why := speculativeOnly(s, set); why != "" {
				return why
			}
			if s.Trace.Path == "" {
				return "a synthetic trace records one token per pass"
			}
			return ""
		}},
	{Name: "drafter", Kind: KindString, Usage: "what drafts, and so what drafting costs: " + strings.Join(DrafterKinds(), ", ") + " (required with --spec-block; with --spec-from-trace, charged for the recorded drafts; see docs/model.md)",
		names: DrafterKinds,
		apply: func(s *Spec, v any) error {
			if s.Speculative == nil { // --spec-from-trace: the drafter of the recorded passes
				s.Speculative = &Speculative{}
			}
			s.Speculative.Drafter = &Drafter{Kind: v.(string)}
			return nil
		}, applies: drafterOnly},
	{Name: "drafter-bytes", Kind: KindSize, Default: "0", Usage: "explicit drafter: weight bytes read per draft token (e.g. 400MB)",
		apply: func(s *Spec, v any) error {
			if b := v.(int64); b > MaxDraftBytes {
				return fmt.Errorf("must be at most %s (a drafter's weights fit in RAM)", MaxDraftBytesText)
			}
			s.Speculative.Drafter.Bytes = v.(int64)
			return nil
		}, applies: explicitDrafterOnly},
	{Name: "drafter-flops", Kind: KindFloat, Default: "0", Usage: "explicit drafter: FLOPs per draft token (e.g. 1.2e9)",
		apply: func(s *Spec, v any) error {
			f := v.(float64)
			if f < 0 || f > float64(MaxDraftFLOPs) {
				return fmt.Errorf("must be in [0, %.0e]", float64(MaxDraftFLOPs))
			}
			s.Speculative.Drafter.FLOPs = int64(math.Round(f))
			return nil
		}, applies: explicitDrafterOnly},
	{Name: "prefill", Kind: KindBool, Default: "false", Usage: "simulate the trace's prefill passes first (warms the cache; never in decode metrics)",
		apply: func(s *Spec, v any) error { s.Prefill = v.(bool); return nil },
		applies: func(s *Spec, _ func(string) bool) string {
			if y := s.Trace.Synthetic; y != nil && y.PromptTokens == 0 {
				return "the synthetic trace has no prefill"
			}
			return ""
		}},
	{Name: "context", Kind: KindInt, Default: "0", Usage: "context tokens charged to the KV cache (0 = longest sequence in the trace)",
		apply: func(s *Spec, v any) error {
			if n := v.(int); n < 0 || n > MaxContextTokens {
				return fmt.Errorf("must be in [0, %d] (0 = the trace's longest sequence; released models hold at most 10 M tokens of context)", MaxContextTokens)
			}
			s.ContextTokens = v.(int)
			return nil
		}, applies: always},
	{Name: "context-cost", Kind: KindBool, Default: "false", Usage: "charge KV-cache reads and attention growing with each token's position, and hybrid layers' recurrent state (time and memory)",
		apply: func(s *Spec, v any) error { s.ContextCost = v.(bool); return nil }, applies: always},
	{Name: "seed", Kind: KindUint, Default: "1", Usage: "seed of everything random in the run: the synthetic trace, the stated predictor and speculative acceptance (--trace-seed, --predict-seed, --accept-seed override each)",
		apply: func(s *Spec, v any) error {
			n := v.(uint64)
			if y := s.Trace.Synthetic; y != nil {
				y.Seed = n
			}
			if s.Predictor != nil {
				s.Predictor.Seed = n
			}
			if s.Speculative != nil {
				s.Speculative.AcceptSeed = n
			}
			return nil
		},
		applies: func(s *Spec, _ func(string) bool) string {
			if s.Trace.Synthetic == nil && s.Predictor == nil && s.Speculative == nil {
				return "nothing in this run is random (a trace file, no --predict-recall, no --spec-block)"
			}
			return ""
		}},
	{Name: "trace-seed", Kind: KindUint, Default: "1", Usage: "seed of the synthetic trace",
		apply:   func(s *Spec, v any) error { s.Trace.Synthetic.Seed = v.(uint64); return nil },
		applies: syntheticOnly("the trace is not generated")},
	{Name: "predict-seed", Kind: KindUint, Default: "1", Usage: "seed of the stated predictor",
		apply: func(s *Spec, v any) error { s.Predictor.Seed = v.(uint64); return nil },
		applies: func(s *Spec, _ func(string) bool) string {
			if s.Predictor == nil {
				return "there is no stated predictor (--predict-recall)"
			}
			return ""
		}},
	{Name: "draft-reuse", Kind: KindFloat, Usage: "probability each of a rejected draft's expert slots repeats an expert of the token before it, on every layer (default: each layer's measured decode reuse; see docs/model.md)",
		apply: func(s *Spec, v any) error {
			r := v.(float64)
			if !(r >= 0 && r <= 1) {
				return errors.New("must be a probability in [0, 1]")
			}
			s.Speculative.DraftReuse = &r
			return nil
		}, applies: speculativeOnly},
	{Name: "accept-seed", Kind: KindUint, Default: "1", Usage: "seed of speculative acceptance",
		apply: func(s *Spec, v any) error { s.Speculative.AcceptSeed = v.(uint64); return nil }, applies: speculativeOnly},
}

// mmapOnly applies to the gguf-mmap layout, the only one with a page cache.
func mmapOnly(s *Spec, _ func(string) bool) string {
	if s.Layout != string(sim.LayoutGGUFMmap) {
		return fmt.Sprintf("it is a setting of the stock page-fault path and the layout is %s (pass --layout gguf-mmap)", s.Layout)
	}
	return ""
}

// speculativeOnly applies when speculative decoding with the acceptance model is on.
func speculativeOnly(s *Spec, _ func(string) bool) string {
	switch {
	case s.SpecFromTrace:
		return "with --spec-from-trace every recorded token is accepted"
	case s.Speculative == nil:
		return "it is a setting of speculative decoding, which --spec-block N (N >= 2) turns on"
	}
	return ""
}

// drafterOnly applies with speculative decoding or the trace's passes (whose
// drafts the drafter is charged for).
func drafterOnly(s *Spec, set func(string) bool) string {
	if s.SpecFromTrace {
		return ""
	}
	return speculativeOnly(s, set)
}

// explicitDrafterOnly applies to a drafter of kind explicit.
func explicitDrafterOnly(s *Spec, set func(string) bool) string {
	if why := drafterOnly(s, set); why != "" {
		return why
	}
	if d := s.Speculative.Drafter; d == nil || !CostStated(d.Kind) {
		return "it states an explicit or model drafter's cost (--drafter explicit, model); other drafters' cost follows from their kind"
	}
	return ""
}

// fileOnly applies to trace files only; why says why not.
func fileOnly(why string) func(*Spec, func(string) bool) string {
	return func(s *Spec, _ func(string) bool) string {
		if s.Trace.Path == "" {
			return why
		}
		return ""
	}
}
