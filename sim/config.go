package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lessim/lessim/devices"
)

// Layout is how expert weights are stored and reached in flash.
type Layout string

const (
	// LayoutPerExpert stores each expert contiguously: one asynchronous read per
	// expert, queued over the flash lanes (the LES storage change).
	LayoutPerExpert Layout = "per-expert"
	// LayoutGGUFMmap is stock llama.cpp: gate/up/down are three separate regions
	// per expert, reached through synchronous page faults on the compute thread,
	// each fault reading max(page, read-ahead) bytes.
	LayoutGGUFMmap Layout = "gguf-mmap"
)

// Layouts lists the valid layouts.
func Layouts() []string { return []string{string(LayoutGGUFMmap), string(LayoutPerExpert)} }

// ParseLayout checks a layout name.
func ParseLayout(s string) (Layout, error) {
	switch Layout(s) {
	case LayoutPerExpert, LayoutGGUFMmap:
		return Layout(s), nil
	}
	return "", fmt.Errorf("unknown layout %q (valid: %s)", s, strings.Join(Layouts(), ", "))
}

// Config is one simulation's inputs besides the trace and the policy. Fill it,
// then Validate; Run validates again.
type Config struct {
	Model  *devices.ModelSpec
	Device *devices.Device

	// CacheBytes is the expert cache budget in bytes. It must hold one pass's
	// experts of the largest layer (MinCacheBytes) and fit the device's budget
	// (DeviceBudget).
	CacheBytes int64
	// Layout selects how misses are read (see Layout).
	Layout Layout
	// CachedFirst computes experts already resident first while misses load
	// (LES); false computes in rank order, each waiting for its load (stock llama.cpp).
	CachedFirst bool
	// Barrier computes a layer's experts only once every one of them is
	// resident: the live driver's top-k hook returns when all misses have
	// loaded, and llama.cpp then runs the layer's experts as one operation
	// (MUL_MAT_ID). Per-expert layout only; excludes CachedFirst.
	Barrier bool

	// SpecBlock is the number of tokens verified per forward pass (1 = no
	// speculative decoding). Each layer of a pass needs the union of the
	// block's experts.
	SpecBlock int
	// SpecAccept is the probability that each draft token is accepted, given
	// the previous one was (geometric acceptance model): a pass emits
	// 1 + (leading accepted drafts among SpecBlock-1) tokens.
	SpecAccept float64
	// Seed drives the acceptance model and the routing of rejected drafts
	// (the only randomness in the engine; two separate PCG streams).
	Seed uint64
	// DraftReuse, when set, is the probability that each of a rejected
	// draft's expert slots repeats an expert of the token before it, on
	// every layer, instead of the layer's measured decode reuse ρ_l (a
	// sensitivity setting: traces do not say how rejected drafts route).
	DraftReuse *float64
	// Drafter names what proposes a pass's SpecBlock-1 drafts (for the
	// result's warnings): "free" states that drafting costs nothing, "ngram"
	// that it reads no weights. Unused without speculative decoding.
	Drafter string
	// DraftBytes and DraftFLOPs are the drafter's cost per draft token: each
	// of a pass's drafts takes max(DraftBytes ÷ (MemBandwidth ×
	// MemEfficiency), DraftFLOPs ÷ ComputeFLOPS) on the compute thread,
	// sequentially, before the verify pass. Zero both for a free drafter.
	// DraftNS, when positive, is a measured time per draft token
	// (compute.draft_token) charged instead.
	DraftBytes, DraftFLOPs, DraftNS int64
	// DraftStats are the trace's statistics that rejected drafts are routed
	// by (speculative decoding with the acceptance model). Nil: measured
	// from the trace, which must then be in memory (Run, or RunSource over a
	// slice); a streamed run is handed them, measured in a first pass.
	DraftStats *DraftStats
	// SpecFromTrace takes speculative passes from the trace instead of the
	// acceptance model: decode tokens sharing a Pass were emitted by one
	// verify pass, then come the drafts it rejected (Phase Draft), loaded as
	// recorded; the drafter is charged for every token of a pass after its
	// first (SpecBlock and SpecAccept are then unused). A trace recorded
	// without a drafter holds no rejected drafts: none is loaded or charged.
	SpecFromTrace bool

	// Prefill simulates the trace's prefill passes first (they warm the cache);
	// decode metrics never include them.
	Prefill bool
	// ContextTokens sizes the KV cache charged against the device's RAM; 0 means
	// the longest sequence in the trace. A step at a position past it is an
	// error: the cache holds positions 0 to ContextTokens-1 only.
	ContextTokens int
	// MmapNeighbours (gguf-mmap only) lets the bytes a fault's read-around or
	// read-ahead brings in beyond the faulting expert stay resident, so the
	// next experts of the same tensors can hit (mmap.go).
	MmapNeighbours bool
	// PageCacheFreeRAM (gguf-mmap only) says the expert cache is the kernel's
	// page cache, whatever RAM is free: CacheBytes is then DeviceBudget and
	// the policy's eviction order stands for the kernel's (lru approximates
	// Linux's two-list LRU). The engine only reports it; the caller sizes
	// the cache and chooses the policy.
	PageCacheFreeRAM bool

	// KeepSeries records per-pass samples in Result.Series (for plots).
	KeepSeries bool
	// ContextCost charges attention over the context (KV-cache reads and
	// attention FLOPs growing with each token's position) and recurrent-state
	// reads and writes per layer, and counts the recurrent state in memory.
	// It needs a model spec that states every layer's mixer
	// (ModelSpec.HasContextShape). Off: neither is charged.
	ContextCost bool
}

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Model == nil {
		add("model: missing")
	} else if len(c.Model.Layers) == 0 || c.Model.Experts <= 0 || c.Model.TopK <= 0 {
		add("model %s: needs layers, experts and top_k", c.Model.Name)
	} else if len(c.Model.Layers) > maxKeyDim || c.Model.Experts > maxKeyDim {
		add("model %s: at most %d MoE layers and %d experts per layer (got %d and %d)", c.Model.Name, maxKeyDim, maxKeyDim, len(c.Model.Layers), c.Model.Experts)
	}
	if c.Device == nil {
		add("device: missing")
	} else {
		d := c.Device
		if d.MemBandwidth <= 0 || d.MemEfficiency <= 0 || d.MemEfficiency > 1 {
			add("device %s: memory bandwidth and efficiency must be positive (efficiency <= 1)", d.Name)
		}
		if d.ComputeFLOPS <= 0 {
			add("device %s: compute_flops must be positive", d.Name)
		}
		if d.Flash.Lanes < 1 || len(d.Flash.SingleLane) == 0 || len(d.Flash.Aggregate) == 0 {
			add("device %s: flash needs lanes >= 1 and both bandwidth curves", d.Name)
		}
		if c.Layout == LayoutGGUFMmap && d.Flash.PageBytes <= 0 {
			add("device %s: gguf-mmap layout needs flash.page_bytes", d.Name)
		}
		if d.AppLimitBytes < 0 || d.RuntimeBytes < 0 {
			add("device %s: app_limit_bytes and runtime_bytes must be >= 0", d.Name)
		}
		if d.AppLimitBytes > 0 && d.Flash.PageBytes <= 0 {
			add("device %s: an app limit (memory pressure refaults) needs flash.page_bytes", d.Name)
		}
	}
	if c.Barrier && (c.CachedFirst || c.Layout == LayoutGGUFMmap) {
		add("barrier: needs the per-expert layout without cached-first (the layer's experts wait for all its loads, then compute)")
	}
	if _, err := ParseLayout(string(c.Layout)); err != nil {
		errs = append(errs, err)
	}
	if c.Layout != LayoutGGUFMmap {
		if c.MmapNeighbours {
			add("mmap neighbours: apply only to the gguf-mmap layout (per-expert reads bring in nothing beyond the expert)")
		}
		if c.PageCacheFreeRAM {
			add("page cache free-ram: applies only to the gguf-mmap layout (per-expert loads go to a managed cache)")
		}
	}
	if c.SpecBlock < 1 {
		add("spec block: must be >= 1 (got %d)", c.SpecBlock)
	}
	if c.SpecAccept < 0 || c.SpecAccept > 1 {
		add("spec accept: must be in [0,1] (got %g)", c.SpecAccept)
	}
	if r := c.DraftReuse; r != nil && !(*r >= 0 && *r <= 1) {
		add("draft reuse: must be in [0,1] (got %g)", *r)
	}
	if c.ContextCost && c.Model != nil && !c.Model.HasContextShape() {
		add("context cost: model %s does not state its layers' mixers (attention or recurrent) and their KV, attention and state sizes", c.Model.Name)
	}
	if c.DraftBytes < 0 || c.DraftFLOPs < 0 || c.DraftNS < 0 {
		add("drafter: bytes, FLOPs and ns per draft token must be >= 0 (got %d, %d, %d)", c.DraftBytes, c.DraftFLOPs, c.DraftNS)
	}
	if c.ContextTokens < 0 {
		add("context tokens: must be >= 0 (got %d)", c.ContextTokens)
	}
	if c.Model != nil && len(c.Model.Layers) > 0 && c.SpecBlock >= 1 {
		if min := MinCacheBytes(c.Model, c.SpecBlock); c.CacheBytes < min {
			add("cache %s is too small: one layer's experts need at least %s (top-%d × %d-token pass × largest expert %s)",
				FormatBytes(c.CacheBytes), FormatBytes(min), c.Model.TopK, c.SpecBlock, FormatBytes(c.Model.MaxExpertBytes()))
		}
	}
	return errors.Join(errs...)
}

// MinCacheBytes is the smallest cache that can hold every expert one pass of
// specBlock tokens may need on the layer with the largest experts.
func MinCacheBytes(m *devices.ModelSpec, specBlock int) int64 {
	n := min(m.TopK*max(specBlock, 1), m.Experts)
	return int64(n) * m.MaxExpertBytes()
}

// DeviceBudget is the RAM left for the expert cache on d after the reserve,
// the resident (non-expert) weights and a KV cache of ctxTokens tokens.
func DeviceBudget(m *devices.ModelSpec, d *devices.Device, ctxTokens int) int64 {
	return d.RAMBytes - d.ReserveBytes - m.NonExpertBytes - m.KVBytesPerToken*int64(ctxTokens)
}

// FormatBudget renders an expert budget (MemoryBudget) as the warnings and
// the text output write it: FormatBytes, or for a negative budget (the
// resident weights, KV cache and reserve already overdraw the memory) "none,
// 14.61 GiB short", never a negative size.
func FormatBudget(b int64) string {
	if b < 0 {
		return "none, " + FormatBytes(-b) + " short"
	}
	return FormatBytes(b)
}

// FormatBytes renders n with a binary unit, e.g. "3.00 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= unit
		if f < unit && f > -unit || u == "TiB" {
			return fmt.Sprintf("%.2f %s", f, u)
		}
	}
	return fmt.Sprintf("%d B", n)
}
