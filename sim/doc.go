// Package sim is lessim's deterministic discrete-event model of MoE decoding
// with expert weights streamed from flash into a bounded RAM cache.
//
// # Inputs and output
//
// Run takes a Config (model spec, resolved device, cache budget, storage
// layout, speculative-decoding settings, seed), a trace as []traces.Step and a
// Policy, and returns a Result. It opens no files, reads no clock and uses no
// global randomness: the only random draw (speculative acceptance) comes from
// a PCG seeded by Config.Seed. Same inputs, same Result, byte for byte.
//
// RunSource takes the trace as a traces.Source instead (a trace file Reader)
// and pulls it one pass at a time: it holds the current pass's steps (a
// prompt, or a speculative block and the drafts it may re-verify) and the
// one step after them it peeks at to find where the pass ends, copied into
// reused buffers, plus 8 bytes per decode token for the exact latency
// percentiles: about 10 KB of steps and 8 MB of latencies for a
// 1,000,000-token trace of the 40-layer, top-8 shape. Run is RunSource over
// the slice (the same code path, so the same Result). Each step is checked
// against the model as it is read; a bad step or a source error (a corrupt
// row of a file: its name, row and reason) ends the run with that error.
//
// # Time
//
// Virtual time is integer nanoseconds (Time). Work becomes time in exactly one
// helper, durationNS, which rounds up. Events on the flash device fire in time
// order; equal times fire in submission order (the read submitted first
// completes first). Flash events at time t are processed before the compute
// thread acts at t, so a read that finishes exactly when the compute thread
// looks is a hit on it. TestEqualTimesFireInSubmissionOrder pins this.
// Reads whose latency ends at one instant begin their transfers together,
// under one recomputation of the shared rates: the same state as one at a
// time, since a recomputation at an instant already recomputed has no
// elapsed time to charge.
//
// # Resources
//
// Compute: one compute thread runs each layer's dense part (attention,
// router, shared expert; DenseBytes read from DRAM, DenseFLOPsPerToken) and
// then the layer's routed experts; each part takes max(bytes ÷ (MemBandwidth
// × MemEfficiency), FLOPs ÷ ComputeFLOPS), plus LayerOverhead per layer
// (and ThreadOverheadNS per compute thread beyond the first). An
// expert computes only once resident; with CachedFirst the experts already
// resident compute first while misses load, otherwise experts compute in rank
// order (stock llama.cpp).
//
// Flash: at most Lanes reads in service; each holds its lane for LatencyNS,
// then transfers sharing the device: k concurrent transfers each progress at
// min(SingleLane(size), Aggregate(size)/k), recomputed when k changes. Demand
// reads start before queued prefetches. Past the saturation knee more lanes
// add latency, not bandwidth.
//
// Memory: the expert cache holds CacheBytes; loads reserve their bytes when
// admitted, so in-flight reads count. DeviceBudget says how much RAM a device
// leaves for the cache after its reserve, the resident weights and the KV
// cache; a larger cache is simulated but warned about.
//
// Context (Config.ContextCost, off by default): after each layer's dense
// part, an attention layer reads its KV cache up to the pass's last position
// and does attention FLOPs for every position each token attends to; a
// recurrent (hybrid) layer reads and writes its fixed state once per pass
// (context.go). The recurrent state is then counted in memory too.
//
// Memory pressure (Device.AppLimitBytes, off when zero): when the app's
// footprint (cache, resident weights, KV cache, state, runtime) exceeds the
// app limit by O bytes, min(O, resident weights) are refaulted at the start
// of every pass through synchronous faults (pressure.go).
//
// # Layouts
//
// per-expert: one contiguous read per expert, asynchronous over the lanes
// (demand misses are issued at once when the top-k is known).
// gguf-mmap: stock llama.cpp. Each expert is three regions (gate, up, down);
// a miss is faulted in on the compute thread when the expert computes: every
// fault costs FaultNS of CPU and reads max(PageBytes, ReadAheadBytes) bytes
// synchronously. Prefetches become one asynchronous read per region
// (madvise WILLNEED). Read-ahead bytes beyond a region are read and counted
// but not credited as cached. The detailed fault path (mmap.go), on when the
// device has several compute threads or an asynchronous read-ahead, or with
// Config.MmapNeighbours, faults each region from all threads at once over
// read-around windows, reads ahead asynchronously, and can make the next
// experts' bytes resident; Books.Arrived admits an expert so completed.
//
// # Backend
//
// On a GPU backend (Device.Backend) each layer's top-k is read on the host
// after one synchronisation (GPUSyncNS on the compute thread), and a policy
// that is a LookaheadRouter pays one more per layer for its lookahead router.
//
// # Passes and speculative decoding
//
// A pass is one forward pass: a prompt's prefill tokens (by the trace's Pass
// field), one decode token, or with SpecBlock B > 1 a verify block of up to B
// decode tokens of one sequence. Each layer needs the union of the pass's
// experts. Its parts' FLOPs are charged per token times Device.PassScale of
// the pass's tokens (compute.pass_scale; 1 for a one-token pass). A pass emits 1 + (leading accepted drafts) tokens, each draft
// accepted with probability SpecAccept; the next pass starts after the last
// accepted token. Throughput counts accepted tokens only.
//
// Nothing is free: before a verify pass of n tokens the drafter's n-1 draft
// steps run on the compute thread, each max(DraftBytes ÷ (MemBandwidth ×
// MemEfficiency), DraftFLOPs ÷ ComputeFLOPS), or a measured DraftNS
// (Result.DraftNS); and the
// rejected drafts are tokens of their own, not the trace's next tokens (which
// would be a free, perfect prefetch of them): their routing is drawn from the
// trace's per-layer statistics (draftRouter; DraftStats, handed in by
// Config.DraftStats when the trace streams), their experts are loaded, and
// the next pass routes the real token again. With SpecFromTrace the passes
// are the recorded ones: their accepted tokens, then the rejected drafts a
// trace recorded with a drafter holds, with their recorded routing; the
// drafter is charged for every token of a pass after its first.
//
// # Policies
//
// A Policy sees the moments a real engine has, in order: the router input of
// a layer (Prefetch, with lookahead scores when the trace has them), the
// layer's selection (Observe Used), and the need for space (Victim). It sees
// a read-only CacheView and never time. Pass boundaries are explicit: a
// PassStart event (first step, tokens) precedes each pass's first Prefetch.
//
// # The books
//
// Books keep the cache's accounts for the simulator and for the live driver
// (runtime/live) alike: capacity, residency, admission and eviction through
// the policy, cancelling queued prefetches, the policy's event stream,
// prefetch accounting and in-use marking, and every decision's validation.
// The I/O is the caller's (raft's Ready/Advance shape): the Books hand out
// reads through a small Loader (Start, Drop, Cancel, Wait) and the caller
// reports finished loads with Loaded. Here the engine is the Loader, with the
// virtual flash behind it; live, the residency lanes' preads.
//
// Built with -tags invariants, the engine checks the books after every layer
// (every key in use is resident once computed) and every pass (used bytes =
// resident + loading bytes within capacity, loading bytes = the Loading keys'
// bytes, no absent key with reads pending) and panics on a violation; without
// the tag the checks compile away.
package sim
