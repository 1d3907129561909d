package experiment

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// problems collects every problem with a spec, each prefixed by its field.
type problems []error

func (ps *problems) add(field, format string, a ...any) {
	*ps = append(*ps, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
}

// finite reports whether v is a finite number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// unit checks v is finite and in [lo, hi].
func (ps *problems) unit(field string, v, lo, hi float64) {
	if !finite(v) || v < lo || v > hi {
		ps.add(field, "must be a finite number in [%g, %g] (got %v)", lo, hi, v)
	}
}

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Validate reports every problem with s at once: ranges, non-finite numbers,
// and settings that do not apply to the rest of the spec (each with the
// reason). It needs no files; Resolve checks what needs the trace or device.
func (s *Spec) Validate() error {
	var ps problems
	if s.Version != Version {
		ps.add("version", "this lessim reads spec version %d (got %d)", Version, s.Version)
	}
	s.validateTrace(&ps)
	s.validateExpertQuant(&ps)
	s.validatePredictor(&ps)
	s.validateDevice(&ps)
	if h := s.Host; h != nil {
		if h.ModelFile == "" {
			ps.add("host.model_file", "missing: the GGUF model the live engine decodes")
		}
		if h.Lanes < 0 || h.Threads < 0 {
			ps.add("host", "lanes and threads must be >= 0 (0 = the live engine's default; got %d and %d)", h.Lanes, h.Threads)
		}
	}
	s.validatePolicy(&ps)
	if s.Cache.Size == "" && s.Cache.Bytes <= 0 {
		ps.add("cache", "needs a size (e.g. 3GiB, 40%%, auto) or bytes > 0")
	}
	if s.Cache.Bytes < 0 {
		ps.add("cache.bytes", "must be >= 0 (got %d)", s.Cache.Bytes)
	}
	if s.Cache.Size != "" {
		if _, err := devices.ParseCacheSize(s.Cache.Size); err != nil {
			ps = append(ps, err)
		}
	}
	if _, err := sim.ParseLayout(s.Layout); err != nil {
		ps = append(ps, err)
	}
	if s.Barrier && s.Layout == string(sim.LayoutGGUFMmap) {
		ps.add("barrier", "does not apply with layout gguf-mmap: each expert faults in as it computes")
	}
	if s.Barrier && s.CachedFirst {
		ps.add("barrier", "excludes cached_first: the layer's experts wait for all its loads, then compute")
	}
	s.validatePageCache(&ps)
	if sp := s.Speculative; sp != nil && s.SpecFromTrace {
		if sp.Block != 0 || sp.Accept != 0 || sp.AcceptSeed != 0 || sp.AcceptFromTrace || sp.DraftReuse != nil {
			ps.add("speculative", "only its drafter applies with spec_from_trace: the passes and their acceptance come from the trace")
		}
		validateDrafter(&ps, sp.Drafter)
	} else if sp != nil {
		if sp.Block < 2 {
			ps.add("speculative.block", "must be >= 2 (got %d); omit the speculative group for no speculative decoding", sp.Block)
		} else if sp.Block > MaxSpecBlock {
			ps.add("speculative.block", "must be at most %d tokens per verify pass (got %d): drafters propose a few tokens per pass (MTP 1-3, EAGLE-2 trees about 60)", MaxSpecBlock, sp.Block)
		}
		ps.unit("speculative.accept", sp.Accept, 0, 1)
		if sp.DraftReuse != nil {
			ps.unit("speculative.draft_reuse", *sp.DraftReuse, 0, 1)
		}
		if sp.AcceptFromTrace && s.Trace.Path == "" {
			ps.add("speculative.accept_from_trace", "needs a trace file with recorded decode passes: a synthetic trace has one token per pass")
		}
		validateDrafter(&ps, sp.Drafter)
	}
	if s.SpecFromTrace && s.Trace.Path == "" {
		ps.add("spec_from_trace", "needs a trace file: a synthetic trace has one decode token per pass")
	}
	if s.Prefill && s.Trace.Synthetic != nil && s.Trace.Synthetic.PromptTokens == 0 {
		ps.add("prefill", "the synthetic trace has no prefill (prompt_tokens 0)")
	}
	if s.ContextTokens < 0 || s.ContextTokens > MaxContextTokens {
		ps.add("context_tokens", "must be in [0, %d] (got %d): 0 is the trace's longest sequence; released models hold at most 10 M tokens of context", MaxContextTokens, s.ContextTokens)
	}
	return errors.Join(ps...)
}

// validateExpertQuant checks that expert_quant, when set, is a ggml type
// spelled as GGUF files spell it (one spelling, so one hash).
func (s *Spec) validateExpertQuant(ps *problems) {
	if s.ExpertQuant == "" {
		return
	}
	q, err := devices.ParseQuantType(s.ExpertQuant)
	switch {
	case err != nil:
		ps.add("expert_quant", "%v", err)
	case string(q) != s.ExpertQuant:
		ps.add("expert_quant", "write %q as GGUF files spell it: %q", s.ExpertQuant, string(q))
	}
}

// validateDrafter checks a speculative group's drafter.
func validateDrafter(ps *problems, d *Drafter) {
	if d == nil {
		ps.add("speculative.drafter", "missing: state what drafts and what it costs (--drafter %s; explicit with --drafter-bytes and --drafter-flops per draft token; free only as an upper bound)",
			strings.Join(DrafterKinds(), "|"))
		return
	}
	if !slices.Contains(DrafterKinds(), d.Kind) {
		ps.add("speculative.drafter.kind", "unknown drafter %q (valid: %s)", d.Kind, strings.Join(DrafterKinds(), ", "))
		return
	}
	if !CostStated(d.Kind) {
		if d.Bytes != 0 || d.FLOPs != 0 {
			ps.add("speculative.drafter", "bytes and flops apply to an explicit or model drafter only; a %s drafter's cost follows from its kind", d.Kind)
		}
		return
	}
	if d.Bytes < 0 || d.Bytes > MaxDraftBytes {
		ps.add("speculative.drafter.bytes", "must be in [0, %d] (%s: a drafter's weights fit in RAM) per draft token (got %d)", MaxDraftBytes, MaxDraftBytesText, d.Bytes)
	}
	if d.FLOPs < 0 || d.FLOPs > MaxDraftFLOPs {
		ps.add("speculative.drafter.flops", "must be in [0, %.0e] per draft token (got %d)", float64(MaxDraftFLOPs), d.FLOPs)
	}
	if d.Bytes == 0 && d.FLOPs == 0 {
		ps.add("speculative.drafter", "an %s drafter needs bytes or flops per draft token > 0 (a drafter that costs nothing is kind free)", d.Kind)
	}
}

func (s *Spec) validateTrace(ps *problems) {
	t := &s.Trace
	switch {
	case t.Path != "" && t.Synthetic != nil:
		ps.add("trace", "a file (path) and synthetic settings exclude each other")
	case t.Path == "" && t.Synthetic == nil:
		ps.add("trace", "needs a path or synthetic settings")
	}
	if t.SHA256 != "" && t.Path == "" {
		ps.add("trace.sha256", "applies only to a trace file")
	} else if t.SHA256 != "" && !hexDigest.MatchString(t.SHA256) {
		ps.add("trace.sha256", "must be 64 lowercase hex digits (got %q)", t.SHA256)
	}
	if t.Path != "" && s.Model != nil {
		ps.add("model", "does not apply with a trace file: the trace's metadata holds the model")
	}
	if t.Synthetic != nil && (s.Model == nil || s.Model.Name == "") {
		ps.add("model", "a synthetic trace needs a model name (see `lessim models list`)")
	}
	if y := t.Synthetic; y != nil {
		if y.Tokens < 0 || y.PromptTokens < 0 || y.Tokens+y.PromptTokens < 1 {
			ps.add("trace.synthetic", "tokens (%d) and prompt_tokens (%d) must be >= 0, together >= 1", y.Tokens, y.PromptTokens)
		}
		if y.Sequences < 1 {
			ps.add("trace.synthetic.sequences", "must be >= 1 (got %d)", y.Sequences)
		}
		ps.unit("trace.synthetic.skew", y.Skew, 0, traces.MaxSkew)
		ps.unit("trace.synthetic.reuse", y.Reuse, 0, 1)
		ps.unit("trace.synthetic.lookahead_recall", y.LookaheadRecall, 0, 1)
		ps.unit("trace.synthetic.depth_penalty", y.DepthPenalty, 0, 1)
		if y.LookaheadDepth < 0 {
			ps.add("trace.synthetic.lookahead_depth", "must be >= 0 (got %d)", y.LookaheadDepth)
		}
	}
}

func (s *Spec) validatePredictor(ps *problems) {
	p := s.Predictor
	if p == nil {
		return
	}
	if y := s.Trace.Synthetic; y != nil && y.LookaheadDepth > 0 {
		ps.add("predictor", "does not apply: the synthetic trace carries its own lookahead scores (lookahead_recall %v); a stated predictor is for traces without them", y.LookaheadRecall)
	}
	// NB: judged only for a known policy, as validatePolicy's groups.
	if pol := s.Policy.Name; policies.CheckName(pol) == nil && pol != "les" {
		ps.add("predictor", "does not apply: policy %s reads no lookahead scores (only les does, when it prefetches)", pol)
	} else if l := s.Policy.LES; pol == "les" && l != nil && l.NoPrefetch {
		ps.add("predictor", "does not apply: les with no_prefetch reads no lookahead scores")
	}
	if !finite(p.Recall) || p.Recall <= 0 || p.Recall > 1 {
		ps.add("predictor.recall", "must be a finite number in (0, 1] (got %v)", p.Recall)
	}
	if !finite(p.FalsePositives) || p.FalsePositives < 0 {
		ps.add("predictor.false_positives", "must be a finite number >= 0 (got %v)", p.FalsePositives)
	}
	ps.unit("predictor.depth_penalty", p.DepthPenalty, 0, 1)
	if p.Depth < 1 {
		ps.add("predictor.depth", "must be >= 1 (got %d)", p.Depth)
	}
}

func (s *Spec) validateDevice(ps *problems) {
	d := &s.Device
	if d.Name != "" && d.File != "" {
		ps.add("device", "an embedded name (%s) and a file (%s) exclude each other", d.Name, d.File)
	}
	if d.Name == "" && d.File == "" && d.Profile == nil {
		ps.add("device", "needs a name, a file or a profile")
	}
	if d.Profile != nil {
		if d.Name != "" && d.Profile.Name != d.Name {
			ps.add("device.profile.name", "%q differs from device.name %q", d.Profile.Name, d.Name)
		}
		// NB: the one check of an inline profile, with the bounds a
		// device file passes; a sweep's device.profile axes land here too.
		for _, err := range d.Profile.Check() {
			*ps = append(*ps, fmt.Errorf("device.profile.%w", err))
		}
	}
}

func (s *Spec) validatePolicy(ps *problems) {
	p := &s.Policy
	if err := policies.CheckName(p.Name); err != nil {
		*ps = append(*ps, err)
	} else {
		// NB: judged only for a known policy: les settings beside a
		// misspelled policy are not settings of another policy.
		if p.LES != nil && p.Name != "les" {
			ps.add("policy.les", "applies only to policy les (policy is %s)", p.Name)
		}
		if p.PinnedHot != nil && p.Name != "pinned-hot" {
			ps.add("policy.pinned_hot", "applies only to policy pinned-hot (policy is %s)", p.Name)
		}
	}
	if l := p.LES; l != nil {
		if l.NoPrefetch && (l.TopN != 0 || l.Threshold != 0 || l.MaxCandidates != 0 || l.Depth != 0 || l.MaxInflightBytes != 0) {
			ps.add("policy.les", "with no_prefetch, top_n, threshold, max_candidates, depth and max_inflight_bytes do not apply (nothing is prefetched)")
		}
		if l.TopN < 0 {
			ps.add("policy.les.top_n", "must be >= 0 (got %d)", l.TopN)
		}
		ps.unit("policy.les.threshold", l.Threshold, 0, 1)
		if l.TopN > 0 && l.Threshold > 0 {
			ps.add("policy.les.top_n", "does not apply with threshold: threshold mode picks candidates by cumulative probability (cap them with max_candidates)")
		}
		if l.MaxCandidates < 0 {
			ps.add("policy.les.max_candidates", "must be >= 0 (got %d)", l.MaxCandidates)
		} else if l.MaxCandidates > 0 && l.Threshold == 0 {
			ps.add("policy.les.max_candidates", "applies only with threshold (it caps a threshold candidate set; top-n mode takes top_n)")
		}
		if l.Depth < 0 {
			ps.add("policy.les.depth", "must be >= 1, or 0 for the default of 1 (no_prefetch turns prefetch off) (got %d)", l.Depth)
		}
		if l.MaxInflightBytes < 0 {
			ps.add("policy.les.max_inflight_bytes", "must be >= 0 (got %d)", l.MaxInflightBytes)
		}
	}
	s.validateLookahead(ps)
	if h := p.PinnedHot; h != nil && h.PinFraction != 0 {
		if !finite(h.PinFraction) || h.PinFraction <= 0 || h.PinFraction > 1 {
			ps.add("policy.pinned_hot.pin_fraction", "must be a finite number in (0, 1] (got %v)", h.PinFraction)
		}
	}
}

// validateLookahead refuses les prefetching deeper than a synthetic trace's
// lookahead scores (without a stated predictor, which brings its own): a
// trace of lookahead_depth 0 has none, so les could not prefetch at all.
// (A trace file's depth is known when it is read: Resolve checks it.)
func (s *Spec) validateLookahead(ps *problems) {
	y, l := s.Trace.Synthetic, s.Policy.LES
	if y == nil || s.Predictor != nil || s.Policy.Name != "les" || (l != nil && l.NoPrefetch) {
		return
	}
	depth := 1
	if l != nil {
		depth = max(l.Depth, 1)
	}
	if depth > y.LookaheadDepth {
		ps.add("policy.les.depth", "%d: the synthetic trace carries lookahead scores to depth %d only (trace.synthetic.lookahead_depth); raise it, or set les no_prefetch or policy ondemand for no prefetch", depth, y.LookaheadDepth)
	}
}

// validatePageCache checks the gguf-mmap settings: page_cache and
// mmap_neighbours apply only to that layout, and the page cache sized by
// free RAM needs cache auto and an LRU policy (the kernel evicts).
func (s *Spec) validatePageCache(ps *problems) {
	mmap := s.Layout == string(sim.LayoutGGUFMmap)
	if _, err := sim.ParseLayout(s.Layout); err != nil {
		mmap = true // NB: an unknown layout (reported above) is no verdict
	}
	if s.MmapNeighbours && !mmap {
		ps.add("mmap_neighbours", "applies only to the gguf-mmap layout (per-expert reads bring in nothing beyond the expert)")
	}
	switch s.PageCache {
	case "":
		return
	case PageCacheFreeRAM:
	default:
		ps.add("page_cache", "%q is not a page cache (valid: %s, or omit it for the cache budget)", s.PageCache, PageCacheFreeRAM)
		return
	}
	if !mmap {
		ps.add("page_cache", "applies only to the gguf-mmap layout (per-expert loads go to a managed cache)")
	}
	if s.Cache.Size != DefaultCache {
		ps.add("page_cache", "%s sizes the cache from the device's free RAM: cache.size must be %s (got %q)", PageCacheFreeRAM, DefaultCache, s.Cache.Size)
	}
	if p := s.Policy.Name; p != "lru" && p != "ondemand" && policies.Describe(p) != "" {
		ps.add("page_cache", "with %s the kernel evicts, in an order lessim approximates by LRU: the policy must be lru or ondemand (got %s)", PageCacheFreeRAM, p)
	}
}
