package experiment

import "github.com/lessim/lessim/devices"

// Version is the spec format version this package reads and writes.
const Version = 1

// Defaults of a run: the published LES target (MiniCPM-V 4.7 on an iPhone 17
// Pro Max) on a synthetic trace, policy les, cache sized by the device.
const (
	DefaultModel  = "minicpm-v-4.7-35b-a3b"
	DefaultDevice = "iphone-17-pro-max"
	DefaultPolicy = "les"
	DefaultCache  = "auto"
	DefaultLayout = "per-expert"
)

// Spec is one experiment: everything that decides a run's numbers, as one
// serializable value. A group that does not apply is absent (nil or zero), so
// a valid spec never carries a setting that would be ignored; Validate
// refuses one that does, with the reason.
//
// Zero leaf values mean "the default" only where a field says so; Resolve
// fills every default, so a resolved spec states each value explicitly and
// resolving it again changes nothing.
type Spec struct {
	// Version is the format version (Version).
	Version int `json:"version"`
	// Model names a built-in model; it is required for synthetic traces and
	// absent with a trace file, whose metadata holds the model.
	Model *Model `json:"model,omitempty"`
	// ExpertQuant re-quantizes the routed experts of the run's model (the
	// built-in Model's variant, or the trace file's model) to this ggml type,
	// spelled as GGUF files spell it (devices.QuantTypes, e.g. "Q3_K"): the
	// same weights, so the same routing and FLOPs, each expert's bytes those
	// of its weights in the new type (devices.ModelSpec.WithExpertQuant).
	// "" keeps the model's own types. A type every expert tensor already
	// has is refused: it would change nothing.
	ExpertQuant string `json:"expert_quant,omitempty"`
	// Trace is the routing trace: a file or synthetic settings.
	Trace Trace `json:"trace"`
	// Predictor is a stated lookahead predictor for a trace file without
	// lookahead scores (nil = none).
	Predictor *Predictor `json:"predictor,omitempty"`
	// Device is the device profile. It is absent (zero) in a measured run's
	// spec whose engine supplies its own device (lessim live here).
	Device Device `json:"device,omitzero"`
	// Host is this machine's side of a run measured here by the live
	// engine (nil for a simulated run and for one on a device agent, whose
	// model and settings are its own).
	Host *Host `json:"host,omitempty"`
	// Policy is the scheduling policy and its parameters.
	Policy Policy `json:"policy"`
	// Cache is the expert cache size.
	Cache Cache `json:"cache"`
	// Layout is how experts are stored: per-expert or gguf-mmap.
	Layout string `json:"layout"`
	// CachedFirst computes resident experts first while misses load (false =
	// rank order, stock llama.cpp).
	CachedFirst bool `json:"cached_first"`
	// Barrier computes a layer's experts only after all of them are resident
	// (the live engine's order; per-expert layout, not cached-first).
	Barrier bool `json:"barrier,omitempty"`
	// PageCache (gguf-mmap only) is where the mapped experts are cached: ""
	// is the cache budget (Cache); PageCacheFreeRAM is the kernel's page
	// cache, whatever RAM is free: Cache must be "auto" (the device's
	// budget) and the policy lru or ondemand, whose LRU order stands for the
	// kernel's eviction (an approximation of Linux's two-list LRU).
	PageCache string `json:"page_cache,omitempty"`
	// MmapNeighbours (gguf-mmap only) lets the bytes a page fault's
	// read-around and read-ahead bring in beyond the faulting expert stay
	// resident, so the next experts of the same tensors can hit.
	MmapNeighbours bool `json:"mmap_neighbours,omitempty"`
	// Speculative is block speculative decoding with a geometric acceptance
	// model (nil = off).
	Speculative *Speculative `json:"speculative,omitempty"`
	// SpecFromTrace takes speculative passes from a trace file's recorded
	// passes instead (excludes Speculative).
	SpecFromTrace bool `json:"spec_from_trace,omitempty"`
	// Prefill simulates the trace's prefill passes first.
	Prefill bool `json:"prefill,omitempty"`
	// ContextTokens charged to the KV cache; 0 = the trace's longest sequence.
	ContextTokens int `json:"context_tokens,omitempty"`
	// ContextCost charges attention over the context and recurrent state per
	// layer, and counts the recurrent state in memory (sim.Config.ContextCost).
	// The model must state its layers' mixers, or be a built-in model
	// (devices.ModelSpec.WithContextShape).
	ContextCost bool `json:"context_cost,omitempty"`
}

// Host is how the live engine on this machine runs a measured spec: the
// GGUF model it decodes (the model routes: a synthetic trace group gives
// only the decode tokens), the prompt it prefills, its I/O lanes and
// compute threads, and the draft model of a model drafter. Zero Prompt,
// Lanes and Threads are the live engine's
// defaults (a fixed sentence, 2 lanes, 1 thread).
type Host struct {
	ModelFile string `json:"model_file"`
	Prompt    string `json:"prompt,omitempty"`
	Lanes     int    `json:"lanes,omitempty"`
	Threads   int    `json:"threads,omitempty"`
	// DraftModel is the GGUF the model drafter runs (speculative.drafter
	// kind model); "" for none.
	DraftModel string `json:"draft_model,omitempty"`
}

// PageCacheFreeRAM is Spec.PageCache for the kernel's page cache sized by free RAM.
const PageCacheFreeRAM = "free-ram"

// Model is a built-in model spec (see devices.LookupModel).
type Model struct {
	Name string `json:"name"`
	// Variant is the quant variant; "" means the model's default.
	Variant string `json:"variant,omitempty"`
}

// Trace is a trace file (Path, with its content digest) or a synthetic trace
// (Synthetic); exactly one.
type Trace struct {
	// Path is a Parquet trace, relative to the working directory.
	Path string `json:"path,omitempty"`
	// SHA256 is the hex SHA-256 of the file's bytes. Resolve fills it; when
	// set, a file whose bytes differ is refused.
	SHA256 string `json:"sha256,omitempty"`
	// Synthetic generates the trace (traces.Synth) from Model.
	Synthetic *Synthetic `json:"synthetic,omitempty"`
}

// Synthetic are traces.SynthOptions (see there for the routing model). A
// synthetic group read from JSON starts from DefaultSynthetic, so absent
// fields keep their defaults.
type Synthetic struct {
	Tokens          int     `json:"tokens"`
	PromptTokens    int     `json:"prompt_tokens"`
	Sequences       int     `json:"sequences"`
	Skew            float64 `json:"skew"`
	Reuse           float64 `json:"reuse"`
	LookaheadRecall float64 `json:"lookahead_recall"`
	LookaheadDepth  int     `json:"lookahead_depth"`
	DepthPenalty    float64 `json:"depth_penalty"`
	// Seed is the trace's own seed.
	Seed uint64 `json:"seed"`
}

// Predictor are traces.PredictOptions (see there for the model). A predictor
// group read from JSON starts from DefaultPredictor.
type Predictor struct {
	Recall         float64 `json:"recall"`
	FalsePositives float64 `json:"false_positives"`
	DepthPenalty   float64 `json:"depth_penalty"`
	Depth          int     `json:"depth"`
	// Seed is the predictor's own seed.
	Seed uint64 `json:"seed"`
}

// Device is an embedded profile (Name) or a profile file (File); Profile is
// the resolved device. When Profile is set it is used as is and Name/File
// only say where it came from, so a resolved spec reproduces its run even if
// the file or the embedded profile changes later.
type Device struct {
	Name    string          `json:"name,omitempty"`
	File    string          `json:"file,omitempty"`
	Profile *devices.Device `json:"profile,omitempty"`
}

// Policy is a registered policy (policies.Names) and the parameters that
// apply to it: LES only with les, PinnedHot only with pinned-hot.
type Policy struct {
	Name      string     `json:"name"`
	LES       *LES       `json:"les,omitempty"`
	PinnedHot *PinnedHot `json:"pinned_hot,omitempty"`
}

// LES are les's parameters (policies.Params). Zero means the default:
// TopN the model's top-k (top-n mode), MaxCandidates 2 × top-k (threshold
// mode), Depth 1. With NoPrefetch no other field applies.
type LES struct {
	TopN             int     `json:"top_n,omitempty"`
	Threshold        float64 `json:"threshold,omitempty"`
	MaxCandidates    int     `json:"max_candidates,omitempty"`
	Depth            int     `json:"depth,omitempty"`
	MaxInflightBytes int64   `json:"max_inflight_bytes,omitempty"`
	NoPrefetch       bool    `json:"no_prefetch,omitempty"`
}

// PinnedHot are pinned-hot's parameters; PinFraction 0 means 0.5.
type PinnedHot struct {
	PinFraction float64 `json:"pin_fraction,omitempty"`
}

// Cache is the expert cache size as the user wrote it (Size: "3GiB", "40%",
// "auto"; see devices.ResolveCache) and in bytes. Resolve fills Bytes; when both
// are set they must agree.
type Cache struct {
	Size  string `json:"size,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
}

// Speculative is block speculative decoding: Block tokens verified per pass
// (≥ 2), each draft accepted with probability Accept given the previous one
// was, drawn from AcceptSeed. The Drafter proposes the Block-1 drafts of each
// pass and says what they cost; it must be stated. Rejected drafts are
// routed as tokens of their own (see sim's doc). With Spec.SpecFromTrace
// only the Drafter applies (Block 0): it is charged for every recorded
// pass's drafts.
type Speculative struct {
	Block      int     `json:"block,omitempty"`
	Accept     float64 `json:"accept"`
	AcceptSeed uint64  `json:"accept_seed"`
	// AcceptFromTrace estimates Accept from a trace file's recorded decode
	// passes (traces.EstimateAcceptance with Block); Resolve fills Accept.
	AcceptFromTrace bool `json:"accept_from_trace,omitempty"`
	// Drafter is what proposes the drafts and its cost; required.
	Drafter *Drafter `json:"drafter,omitempty"`
	// DraftReuse, when set, is the probability each of a rejected draft's
	// expert slots repeats an expert of the token before it (sim's
	// Config.DraftReuse); unset, each layer's measured decode reuse.
	DraftReuse *float64 `json:"draft_reuse,omitempty"`
}

// Bounds of the speculative settings. NB: like the device bounds, they also
// keep simulated time exact: a draft token's bytes at the slowest memory
// (1 GB/s × 1%) take at most 1.8e15 ns and its FLOPs at 1 GFLOPS 1e15 ns,
// below 2^53, and a pass drafts at most MaxSpecBlock-1 of them.
const (
	// MaxSpecBlock is the most tokens one verify pass may hold: drafters in
	// use propose a few tokens per pass (MTP heads 1-3, EAGLE-2 trees about
	// 60 nodes), and beyond 64 a block is a different decoding scheme.
	MaxSpecBlock = 64
	// MaxDraftBytes is the most weight bytes one draft token may read: a
	// drafter reads from DRAM, so its weights fit in RAM, at most 16 TiB
	// (the bound of a profile's memory.ram).
	MaxDraftBytes int64 = 16 << 40
	// MaxDraftBytesText is MaxDraftBytes as messages and options write it.
	MaxDraftBytesText = "16TiB"
	// MaxDraftFLOPs is the most FLOPs one draft token may do: 2 per weight
	// of a model of at most 1024 blocks of 1e12 FLOPs (the bounds of a model
	// spec's blocks and per-layer FLOPs).
	MaxDraftFLOPs int64 = 1e15
)

// MaxContextTokens bounds Spec.ContextTokens: the longest context windows of
// released models hold 10 M tokens (Llama 4 Scout); 1e8 leaves room, and
// its KV cache (at most 64 MiB per token, a model spec's bound) stays far
// within int64 bytes.
const MaxContextTokens = 100_000_000

// Drafter kinds (Drafter.Kind).
const (
	// DrafterFree drafts at no cost: the old behaviour, an upper bound, warned.
	DrafterFree = "free"
	// DrafterMTP is a multi-token-prediction head of the target: each draft
	// token runs one more of the target's MoE layers (the last one's dense
	// part and top-k experts) and its output head, all read from DRAM.
	DrafterMTP = "mtp"
	// DrafterNgram is n-gram (prompt lookup) drafting: it reads no weights;
	// its table lookup is not charged.
	DrafterNgram = "ngram"
	// DrafterExplicit is a drafter whose cost per draft token is stated in
	// Bytes and FLOPs, e.g. a small dense draft model: its weight bytes and
	// 2 × its parameters in FLOPs.
	DrafterExplicit = "explicit"
	// DrafterControlled is the live engine's experimental drafter: the
	// target's own next greedy token with probability Accept, another
	// otherwise (runtime/record). It reads no weights; its lookup is not
	// charged. Simulated, it is the acceptance model at Accept.
	DrafterControlled = "controlled"
	// DrafterModel is the live engine's draft model (live --draft-model): a
	// small GGUF with the target's vocabulary decoding greedily. Its cost
	// per draft token is stated in Bytes and FLOPs, as for explicit; live
	// states its every weight but the token embedding and 2 FLOPs each.
	DrafterModel = "model"
)

// DrafterKinds lists the drafter kinds.
func DrafterKinds() []string {
	return []string{DrafterFree, DrafterMTP, DrafterNgram, DrafterExplicit, DrafterControlled, DrafterModel}
}

// CostStated reports whether a drafter of kind states its cost per draft
// token in bytes and FLOPs (explicit, model); other kinds' cost follows
// from the kind.
func CostStated(kind string) bool {
	return kind == DrafterExplicit || kind == DrafterModel
}

// Drafter is what proposes speculative drafts and what one draft token costs
// on the compute thread (sim.Config.DraftBytes and DraftFLOPs).
type Drafter struct {
	// Kind is one of DrafterKinds.
	Kind string `json:"kind"`
	// Bytes and FLOPs are read and done per draft token (explicit only).
	Bytes int64 `json:"bytes,omitempty"`
	FLOPs int64 `json:"flops,omitempty"`
}

// Cost is one draft token's weight bytes read and FLOPs on model m.
func (d *Drafter) Cost(m *devices.ModelSpec) (bytes, flops int64) {
	switch d.Kind {
	case DrafterMTP:
		l := &m.Layers[len(m.Layers)-1]
		k := int64(m.TopK)
		return l.DenseBytes + k*l.ExpertBytes + m.HeadBytes, l.DenseFLOPsPerToken + k*l.ExpertFLOPsPerToken + m.HeadFLOPsPerToken
	case DrafterExplicit, DrafterModel:
		return d.Bytes, d.FLOPs
	}
	return 0, 0
}

// DefaultSpec is simulate with no flags: a 2,000-token synthetic trace of
// DefaultModel (seed 1) on DefaultDevice, les, cache auto, per-expert layout,
// cached experts first.
func DefaultSpec() Spec {
	syn := DefaultSynthetic()
	return Spec{
		Version:     Version,
		Model:       &Model{Name: DefaultModel},
		Trace:       Trace{Synthetic: &syn},
		Device:      Device{Name: DefaultDevice},
		Policy:      Policy{Name: DefaultPolicy},
		Cache:       Cache{Size: DefaultCache},
		Layout:      DefaultLayout,
		CachedFirst: true,
	}
}

// DefaultSynthetic is traces.DefaultSynthOptions as a Synthetic.
func DefaultSynthetic() Synthetic {
	return Synthetic{Tokens: 2000, Sequences: 1, Skew: 1.3, Reuse: 0.45,
		LookaheadRecall: 0.807, LookaheadDepth: 1, DepthPenalty: 0.0375, Seed: 1}
}

// DefaultPredictor is traces.DefaultPredictOptions as a Predictor.
func DefaultPredictor() Predictor {
	return Predictor{Recall: 0.807, FalsePositives: 1.5, DepthPenalty: 0.0375, Depth: 1, Seed: 1}
}

// DefaultSpeculative is a 4-token block with acceptance 0.7, seed 1.
func DefaultSpeculative() Speculative { return Speculative{Block: 4, Accept: 0.7, AcceptSeed: 1} }
