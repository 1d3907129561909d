// Package policies holds lessim's expert scheduling policies: what to prefetch
// and what to evict when the routed experts of a Mixture-of-Experts model
// stream from flash into a RAM cache of CacheBytes. Each policy is one small
// file; the registry (registry.go) is the one map from name to constructor and
// description, used by New, Names and Describe.
//
// # What a policy sees
//
// A policy is the same Go value whether sim replays a trace or the runtime
// drives the real engine, so it may only react to the moments a real engine
// has, in order (DESIGN.md, "The point of the design"):
//
//  1. the router input of layer l is known: Prefetch, with the lookahead
//     router scores for layers l+1..l+d when the trace or engine has them;
//  2. the top-k of layer l is known: the engine demand-loads the misses and
//     reports a Used event per distinct expert (plus Admitted/Evicted events);
//  3. space is needed: Victim names a Resident, not InUse expert, or declines.
//
// Prefetch names every key the policy predicts, resident or not: the engine
// skips those already resident or loading, and counts the naming, so the
// Result's prefetch recall and precision measure the prediction itself.
//
// It sees a read-only CacheView (residency, free, loading and capacity bytes,
// per-layer expert sizes), never time, and never the future: the oracle and
// pinned-hot get the trace through their constructor, by design. Capacity is in
// bytes because expert sizes differ by layer (e.g. Q6_K down-projections).
// Keys are sim.Key = MoE layer × experts + expert; every policy keeps its state
// in flat slices over all keys (no maps on the event path).
//
// # The policies
//
//   - lru: evict the least recently used (Used and Admitted refresh); no prefetch.
//   - ondemand: the stock llama.cpp baseline of the ablation (load on demand,
//     LRU); behaviourally identical to lru, kept as its own name.
//   - lfu: evict the least frequently used (Used count over the whole run),
//     ties least recently used; no prefetch.
//   - les: Lookahead Expert Scheduling. Layer l's router input fed to the
//     routers of layers l+1..l+Depth ("stale gate": adjacent residual streams
//     are similar, so no predictor is trained) names candidates that are
//     prefetched while layer l computes; the real router still decides.
//     Published figures: about 80% recall of the next layer's experts on a
//     35B-A3B (MiniCPM-V 4.7); independently 80.7% of routed slots on
//     Qwen3.6-35B-A3B and 88.6% on Qwen3-30B-A3B, about 3.5–4 points less per
//     extra layer of depth; the previous token's experts alone predict only
//     35–43%. A hit-rate gain is not a throughput gain: on UFS 4 flash the
//     extra reads (+37% bytes) cost wall-clock time, which sim shows.
//   - oracle: perfect next-layer prefetch plus Belady eviction — a hit-rate
//     reference for prefetching policies, NOT a throughput bound: its perfect
//     prefetches still cost flash bandwidth, so on saturated flash a policy
//     that reads less can decode faster.
//   - belady: classic Belady MIN, demand admission and farthest-next-use
//     eviction, what other replay tools report as the optimum: with one
//     token per pass and equal expert sizes no demand-paging policy misses
//     less. Reference: L. A. Belady, "A study of replacement algorithms for a
//     virtual-storage computer", IBM Systems Journal 5(2), 1966 (MIN).
//   - pinned-hot: a static hot list from an offline profile of the trace,
//     pinned in PinFraction of the cache; LRU for the rest. NB: the profile is
//     the same trace it is evaluated on (in-sample), so it flatters the policy;
//     results carry a warning saying so.
//
// # Units and determinism
//
// Bytes for sizes; no time. Policies hold no randomness, so the same event
// sequence gives the same decisions. Params documents every knob and its default.
package policies
