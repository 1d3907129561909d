package ablation

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
)

// StockVariant is the built-in models' variant the stock step uses, and
// MixedQuant the type the mixed-precision step re-quantizes the experts to
// (experiment.Spec.ExpertQuant).
const (
	StockVariant = "q4_k_m"
	MixedQuant   = "Q3_K"
)

// Step is one stage of the ablation: what it adds and the named option
// changes (experiment.Options) that make it from the step before.
type Step struct {
	// Key is the step's short name: stock, lookahead, storage, mixed,
	// speculative, or oracle for the reference row.
	Key string `json:"key"`
	// Label names the step in tables and plots, e.g. "+ lookahead prefetch".
	Label string `json:"label"`
	// About says what the step models, in one sentence.
	About string `json:"about"`
	// Changes are the option values applied to the previous step's spec.
	Changes []Change `json:"named_changes"`
	// Reference marks a reference row: compared with the baseline only, not
	// a step of the sequence.
	Reference bool `json:"reference,omitempty"`
	// Without, on a leave-one-out row (a reference row too), is the key of
	// the step it leaves out; such a row is compared with the last step.
	Without string `json:"without,omitempty"`
	// Of, on a sensitivity row (a reference row too), is the key of the
	// step it runs with one assumption changed; such a row is compared
	// with that step's previous step.
	Of string `json:"of,omitempty"`
	// omits is the left-out (or varied) step's order (1-based), for labels.
	omits int
}

// DraftReuseBounds are the speculative step's sensitivity rows: the step
// with each rejected draft's expert slots repeating an expert of the token
// before it with these probabilities (experiment's --draft-reuse), from
// independent of it to all shared, where the step itself uses each layer's
// measured decode reuse. Traces without recorded drafts do not say how
// rejected drafts route (docs/model.md), so the step's gain is a range.
var DraftReuseBounds = []float64{0, 1}

// Change is one named option value of a step and the spec field it sets.
type Change struct {
	// Option is the experiment option's name (simulate's flag), Value its value as written.
	Option string `json:"option"`
	Value  string `json:"value"`
	// Field is the spec field (dotted JSON path) the option sets; the
	// resolved spec may change below it (policy.les.* when the policy
	// becomes les) and nowhere else.
	Field string `json:"field"`
	// WithModelOnly drops the change when the spec has no model (a trace
	// file, whose metadata fixes the model and its variant).
	WithModelOnly bool `json:"with_model_only,omitempty"`
}

// Settings are the ablation's inputs: what every step shares and the
// speculative step's parameters.
type Settings struct {
	// Base are experiment options common to every step (e.g. device, cache,
	// model, tokens, trace), as written.
	Base map[string]string
	// Seed seeds the synthetic trace (when there is one) and speculative
	// acceptance.
	Seed uint64
	// SpecBlock (>= 2) and SpecAccept (in [0, 1]) are the speculative step's
	// tokens per verify pass and per-draft acceptance probability.
	SpecBlock  int
	SpecAccept float64
	// Drafter is the speculative step's drafter kind (experiment.DrafterKinds);
	// DrafterBytes and DrafterFLOPs are its cost per draft token when it is
	// explicit.
	Drafter      string
	DrafterBytes int64
	DrafterFLOPs int64
	// Reference adds the oracle reference row.
	Reference bool
	// LeaveOneOut adds, for each step between the first and the last that
	// runs, a row with every other step's changes applied in order but not
	// its own: what the finished configuration loses without it. (Leaving
	// out the last step gives the step before it; the first is the base.)
	LeaveOneOut bool
}

// DefaultDrafter is the speculative step's default drafter: the target's
// multi-token-prediction head (assumed; see the package doc).
const DefaultDrafter = experiment.DrafterMTP

// DefaultSettings are the embedded defaults: experiment's default model,
// device and cache, seed 1, experiment.DefaultSpeculative's block and
// acceptance and DefaultDrafter (assumed; see the package doc), and the
// reference row.
func DefaultSettings() Settings {
	sp := experiment.DefaultSpeculative()
	return Settings{Base: map[string]string{}, Seed: 1, SpecBlock: sp.Block, SpecAccept: sp.Accept, Drafter: DefaultDrafter, Reference: true}
}

// validate checks the settings that are the ablation's own.
func (s *Settings) validate() error {
	var errs []error
	if s.SpecBlock < 2 || s.SpecBlock > experiment.MaxSpecBlock {
		errs = append(errs, fmt.Errorf("--spec-block %d: the speculative step verifies 2 to %d tokens per pass", s.SpecBlock, experiment.MaxSpecBlock))
	}
	if math.IsNaN(s.SpecAccept) || s.SpecAccept < 0 || s.SpecAccept > 1 {
		errs = append(errs, fmt.Errorf("--spec-accept %v: must be a probability in [0, 1]", s.SpecAccept))
	}
	if err := experiment.CheckValue("drafter", s.Drafter); err != nil {
		errs = append(errs, err)
	}
	switch {
	case s.DrafterBytes < 0 || s.DrafterFLOPs < 0 || s.DrafterBytes > experiment.MaxDraftBytes || s.DrafterFLOPs > experiment.MaxDraftFLOPs:
		errs = append(errs, fmt.Errorf("--drafter-bytes %d, --drafter-flops %d: must be in [0, %s] and [0, %.0e] per draft token", s.DrafterBytes, s.DrafterFLOPs, experiment.MaxDraftBytesText, float64(experiment.MaxDraftFLOPs)))
	case experiment.CostStated(s.Drafter) && s.DrafterBytes == 0 && s.DrafterFLOPs == 0:
		errs = append(errs, fmt.Errorf("--drafter %s: state its cost per draft token with --drafter-bytes and/or --drafter-flops", s.Drafter))
	case !experiment.CostStated(s.Drafter) && (s.DrafterBytes != 0 || s.DrafterFLOPs != 0):
		errs = append(errs, fmt.Errorf("--drafter-bytes and --drafter-flops state an explicit or model drafter's cost; drafter %s's follows from its kind", s.Drafter))
	}
	if len(errs) == 0 {
		// NB: the speculative step's options as experiment reads them, so a
		// value it refuses fails here, not as a skipped step.
		values := map[string]string{}
		for _, c := range s.specChanges() {
			values[c.Option] = c.Value
		}
		if _, err := experiment.FromOptions(values); err != nil {
			errs = append(errs, fmt.Errorf("the speculative step: %w", err))
		}
	}
	for name := range s.Base {
		if strings.HasPrefix(name, "spec-") || strings.HasPrefix(name, "drafter") || name == "seed" || name == "accept-seed" {
			errs = append(errs, fmt.Errorf("option %q is the ablation's own setting (Settings.Seed, SpecBlock, SpecAccept, Drafter)", name))
		}
	}
	return errors.Join(errs...)
}

// Steps lists the ablation's steps in order for s, then the reference row
// when s.Reference is set.
func Steps(s Settings) []Step {
	steps := []Step{
		{Key: "stock", Label: "stock llama.cpp",
			About: "llama.cpp as shipped: experts reached through mmap page faults in the GGUF layout, loaded on demand (no prefetch), computed in router rank order, Q4_K_M",
			Changes: []Change{
				{Option: "policy", Value: "ondemand", Field: "policy"},
				{Option: "layout", Value: "gguf-mmap", Field: "layout"},
				{Option: "cached-first", Value: "false", Field: "cached_first"},
				{Option: "variant", Value: StockVariant, Field: "model.variant", WithModelOnly: true},
			}},
		{Key: "lookahead", Label: "+ lookahead prefetch",
			About:   "layer l's router input fed to layer l+1's router; its top candidates prefetched while layer l computes (policy les with its defaults)",
			Changes: []Change{{Option: "policy", Value: "les", Field: "policy"}}},
		{Key: "storage", Label: "+ per-expert storage, cached first",
			About: "each expert contiguous (one read per expert), and experts already in RAM computed first while misses load",
			Changes: []Change{
				{Option: "layout", Value: "per-expert", Field: "layout"},
				{Option: "cached-first", Value: "true", Field: "cached_first"},
			}},
		{Key: "mixed", Label: "+ mixed precision (" + MixedQuant + " experts)",
			About:   "expert weights re-quantized to " + MixedQuant + ", everything else as the model has it (Q4_K_M): the same routing, fewer bytes per expert read and more experts per cache byte",
			Changes: []Change{{Option: "expert-quant", Value: MixedQuant, Field: "expert_quant"}}},
		{Key: "speculative", Label: fmt.Sprintf("+ speculative decoding (block %d, α %.2f, %s)", s.SpecBlock, s.SpecAccept, s.Drafter),
			About:   "a drafter proposes tokens, at its own cost on the compute thread; the target verifies them in one pass whose layers load the union of their experts, rejected drafts' experts as their own (geometric acceptance model)",
			Changes: s.specChanges()},
	}
	if s.Reference {
		steps = append(steps, Step{Key: "oracle", Label: "oracle (hit-rate reference)", Reference: true,
			About:   "the last step's settings with policy oracle (true next-layer experts prefetched, Belady eviction): a hit-rate reference, not a throughput bound",
			Changes: []Change{{Option: "policy", Value: "oracle", Field: "policy"}}})
	}
	return steps
}

// specChanges are the speculative step's option values.
func (s *Settings) specChanges() []Change {
	c := []Change{
		{Option: "spec-block", Value: strconv.Itoa(s.SpecBlock), Field: "speculative"},
		{Option: "spec-accept", Value: strconv.FormatFloat(s.SpecAccept, 'g', -1, 64), Field: "speculative"},
		{Option: "accept-seed", Value: strconv.FormatUint(s.Seed, 10), Field: "speculative"},
		{Option: "drafter", Value: s.Drafter, Field: "speculative"},
	}
	if s.DrafterBytes != 0 {
		c = append(c, Change{Option: "drafter-bytes", Value: strconv.FormatInt(s.DrafterBytes, 10) + "B", Field: "speculative"})
	}
	if s.DrafterFLOPs != 0 {
		c = append(c, Change{Option: "drafter-flops", Value: strconv.FormatInt(s.DrafterFLOPs, 10), Field: "speculative"})
	}
	return c
}

// Built is a step's spec before resolution, or the reason it is skipped.
type Built struct {
	Step Step
	// Spec is the step's spec: Prev's spec with the step's changes.
	Spec experiment.Spec
	// Prev is the index of the step this one builds on (-1 for the first).
	Prev int
	// Skipped says why the step's change cannot be expressed here ("" = it runs).
	Skipped string
}

// Build makes every step's spec from s: the base from s.Base over
// experiment.DefaultSpec, then each step from the last step that was not
// skipped. The first step cannot be skipped; an option that does not apply
// to the base is an error with experiment's reason. What only resolving a
// spec tells (a trace's model whose experts cannot be re-quantized) is not
// known here: Run skips such a step.
func Build(s Settings) ([]Built, error) { return build(s, nil) }

// build is Build; check, when not nil, is shown each step that can be built
// (with its index) and may skip it with a reason, or fail the ablation.
func build(s Settings, check func(i int, b Built) (string, error)) ([]Built, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	base, err := experiment.FromOptions(s.Base)
	if err != nil {
		return nil, err
	}
	if base.Trace.Synthetic != nil {
		if err := experiment.Apply(&base, map[string]string{"seed": strconv.FormatUint(s.Seed, 10)}); err != nil {
			return nil, err
		}
	}
	var out []Built
	prev, last := base, -1
	for _, st := range Steps(s) {
		spec, why := apply(prev, st.Changes)
		b := Built{Step: st, Spec: spec, Prev: last}
		if why == "" && check != nil {
			if why, err = check(len(out), b); err != nil {
				return nil, err
			}
		}
		if why != "" && last < 0 {
			return nil, fmt.Errorf("step %s: %s", st.Key, why)
		}
		b.Skipped = why
		out = append(out, b)
		if why == "" && !st.Reference {
			prev, last = spec, len(out)-1
		}
		if why == "" && st.Key == "speculative" {
			if out, err = draftReuseRows(out, check); err != nil {
				return nil, err
			}
		}
	}
	if s.LeaveOneOut {
		return leaveOneOut(out, base, last, check)
	}
	return out, nil
}

// leaveOneOut appends to the built steps one row per step strictly between
// the first and the last (index last) that was not skipped: base with every
// other such step's changes, in order, and compared with the last step. A
// row whose changes cannot be applied, or that check skips, is skipped with
// the reason.
func leaveOneOut(out []Built, base experiment.Spec, last int, check func(i int, b Built) (string, error)) ([]Built, error) {
	n := len(out)
	runs := func(j int) bool { return !out[j].Step.Reference && out[j].Skipped == "" }
	for k := 1; k < last; k++ {
		if !runs(k) {
			continue
		}
		spec, why := base, ""
		for j := 0; j < n && why == ""; j++ {
			if j != k && runs(j) {
				spec, why = apply(spec, out[j].Step.Changes)
			}
		}
		st := out[k].Step
		b := Built{Spec: spec, Prev: last, Step: Step{Key: "without-" + st.Key, Reference: true, Without: st.Key, omits: k + 1,
			Label: "w/o " + strings.TrimPrefix(st.Label, "+ "),
			About: fmt.Sprintf("step (%d)'s settings without step (%d)'s changes (every other step's applied in order): what the finished configuration owes to %s", last+1, k+1, strings.TrimPrefix(st.Label, "+ "))}}
		var err error
		if out, err = appendChecked(out, b, why, check); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendChecked appends b to out, skipped with why, or, when why is "",
// with what check (when set) says.
func appendChecked(out []Built, b Built, why string, check func(i int, b Built) (string, error)) ([]Built, error) {
	if why == "" && check != nil {
		var err error
		if why, err = check(len(out), b); err != nil {
			return nil, err
		}
	}
	b.Skipped = why
	return append(out, b), nil
}

// draftReuseRows appends the sensitivity rows of the step last in out (the
// speculative step), one per DraftReuseBounds value, built on its spec and
// compared with its previous step.
func draftReuseRows(out []Built, check func(i int, b Built) (string, error)) ([]Built, error) {
	k := len(out) - 1
	sp := out[k]
	for _, r := range DraftReuseBounds {
		v := strconv.FormatFloat(r, 'g', -1, 64)
		c := Change{Option: "draft-reuse", Value: v, Field: "speculative"}
		spec, why := apply(sp.Spec, []Change{c})
		b := Built{Spec: spec, Prev: sp.Prev, Step: Step{Key: "speculative-draft-reuse-" + v, Label: "draft reuse " + v, Reference: true, Of: sp.Step.Key, omits: k + 1,
			Changes: append(slices.Clone(sp.Step.Changes), c),
			About:   "rejected drafts' expert slots repeat an expert of the token before them with probability " + v + " on every layer, not each layer's measured decode reuse"}}
		var err error
		if out, err = appendChecked(out, b, why, check); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// apply returns prev with changes, or why they cannot be applied.
func apply(prev experiment.Spec, changes []Change) (experiment.Spec, string) {
	s, err := roundTrip(prev)
	if err != nil {
		return s, err.Error()
	}
	values := map[string]string{}
	for _, c := range changes {
		if c.WithModelOnly && s.Model == nil {
			continue
		}
		if c.Option == "variant" && s.Model != nil {
			if vs := devices.ModelVariants(s.Model.Name); vs != nil && !slices.Contains(vs, c.Value) {
				return s, fmt.Sprintf("model %s has no variant %s (its variants: %s)", s.Model.Name, c.Value, strings.Join(vs, ", "))
			}
		}
		values[c.Option] = c.Value
	}
	if err := experiment.Apply(&s, values); err != nil {
		return s, err.Error()
	}
	return s, ""
}

// roundTrip is a deep copy of s (through its canonical JSON), so a step's
// changes never write into the spec it builds on.
func roundTrip(s experiment.Spec) (experiment.Spec, error) {
	b, err := s.Canonical()
	if err != nil {
		return s, err
	}
	return experiment.Parse(b)
}
