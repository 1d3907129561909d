package sim

import "github.com/lessim/lessim/traces"

// Key names one routed expert of one MoE layer: Layer*Experts + Expert.
type Key int32

// MakeKey packs (layer, expert) for a model with n experts per layer.
func MakeKey(layer, expert, n int) Key { return Key(layer*n + expert) }

// Split unpacks a key for a model with n experts per layer.
func (k Key) Split(n int) (layer, expert int) { return int(k) / n, int(k) % n }

// Residency is an expert's state in the cache.
type Residency uint8

const (
	// Absent experts are in flash only.
	Absent Residency = iota
	// Loading experts hold their bytes while a read is queued or in flight.
	Loading
	// Resident experts are in RAM and can compute.
	Resident
)

// CacheView is the read-only view of the expert cache a policy is shown. It
// never reveals time or the future.
type CacheView interface {
	// State is k's residency now.
	State(k Key) Residency
	// InUse reports whether k is needed by the layer being computed (it cannot be evicted).
	InUse(k Key) bool
	// Evictable reports whether the engine may evict k now: Resident and not
	// InUse (one call where a victim search would make two).
	Evictable(k Key) bool
	// FreeBytes is capacity minus resident and loading bytes.
	FreeBytes() int64
	// LoadingBytes is the bytes of loads queued or in flight.
	LoadingBytes() int64
	// CapacityBytes is the cache budget.
	CapacityBytes() int64
	// ExpertBytes is the size of one expert of layer.
	ExpertBytes(layer int) int64
}

// Lookahead is what a policy knows at moment 1 of a layer: the router input of
// Layer is known for every token of the pass. The engine reuses it between calls.
type Lookahead struct {
	Layer int // MoE layer whose router input just became known
	// Steps are the trace step indices of the tokens in this pass (one for plain
	// decode, the verify block for speculative decoding, the prompt for prefill).
	Steps []int64
	// Scores[t][d-1] are token t's router scores for MoE layer Layer+d, computed
	// from Layer's router input (nil when the trace has none); len = experts.
	// The simulator shows them (and Index) only to a policy that runs the
	// lookahead router (a LookaheadRouter whose UsesLookahead is true);
	// others see nil.
	Scores [][][]float32
	// Index[t][d-1] are the precomputed best candidates of Scores[t][d-1]
	// (traces.IndexLookahead); nil when the trace was not indexed.
	Index [][]traces.CandidateIndex
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// Used: the real router of Layer selected Key for a token of the pass
	// (moment 2). Sent once per distinct expert per layer per pass, after the
	// engine has marked hits and started loads for the misses, in order of each
	// expert's last use in the pass (rank order for one token).
	Used EventKind = iota
	// Admitted: Key's bytes were reserved and its load started (demand or prefetch).
	Admitted
	// Evicted: Key left the cache (its bytes are free).
	Evicted
	// PassStart: a forward pass begins over Tokens tokens, the first of which
	// is trace step Step (Key 0, Layer -1). Sent before the pass's first
	// Prefetch; policies that keep per-pass state start it here.
	PassStart
)

// Event tells a policy what happened to the cache. Step is the trace step index
// of the token concerned (for Admitted/Evicted: the first token of the current pass).
type Event struct {
	Kind     EventKind
	Key      Key
	Layer    int
	Step     int64
	Prefetch bool  // Admitted by a prefetch rather than a demand miss
	Tokens   int32 // PassStart: tokens in the pass
}

// Policy decides what to prefetch and what to evict; the Books keep the books
// (capacity, in-flight loads, stalls) and rejects invalid decisions with an error.
// A Policy is the same value whether sim replays a trace or the runtime drives a
// real engine, so it must not depend on time.
type Policy interface {
	// Name is the registry name, e.g. "lru".
	Name() string
	// Prefetch is moment 1: the router input of la.Layer is known. The policy
	// appends the experts it wants loaded, most wanted first, to dst and returns
	// it. The engine skips keys already resident or loading and stops admitting
	// when Victim declines to make room. la and its slices are only valid during the call.
	Prefetch(la *Lookahead, view CacheView, dst []Key) []Key
	// Observe is told of every use, admission and eviction, in order.
	Observe(ev Event)
	// Victim is moment 3: name a Resident, not InUse expert to evict so that
	// need more bytes fit. forPrefetch is true when the room is for a prefetch
	// (a policy may decline then to protect its cache). ok=false declines.
	Victim(view CacheView, need int64, forPrefetch bool) (k Key, ok bool)
}

// UsesObserver is an optional method of a Policy: when a policy has it, the
// Books report a layer's Used events with one ObserveUses call instead of
// one Observe call per key. It must do exactly what Observe does for
// Event{Kind: Used, Key: k, Layer: layer, Step: step} for each k of keys, in
// order (a cross-check runs every registered policy both ways). keys is only
// valid during the call.
type UsesObserver interface {
	ObserveUses(keys []Key, layer int, step int64)
}

// LoadObserver is an optional method set of a Policy: when a policy has it,
// the Books report admissions and evictions with these calls instead of
// Observe (one of each per miss: no Event to build and no switch on its
// kind). Admitted(k, prefetch) must do exactly what Observe does for
// Event{Kind: Admitted, Key: k, Layer: k's layer, Step: the pass's first
// step, Prefetch: prefetch}, and Evicted(k) what it does for the Evicted
// event (a cross-check runs every registered policy both ways).
type LoadObserver interface {
	Admitted(k Key, prefetch bool)
	Evicted(k Key)
}

// LookaheadRouter is implemented by a policy that runs the next layer's router
// on the current layer's input (les): on a GPU backend that costs the compute
// thread one more host-device synchronisation per layer. UsesLookahead
// reports whether this instance does (les with prefetch off does not).
type LookaheadRouter interface {
	UsesLookahead() bool
}
