// Package live runs a cache policy against the real llama.cpp engine on this
// machine and measures what the simulator predicts: the same policies value
// (policies.New) and the same sim.Books drive it, and it returns the same
// *sim.Result, so a report can put prediction and measurement side by side.
//
// # Model
//
// llama.cpp decodes from its file mapping; the driver decides which routed
// experts are in the page cache (runtime/residency: MADV_RANDOM on the
// mapping, every expert tensor evicted at start, loads by pread on I/O lanes,
// evictions by MADV_DONTNEED + FADV_DONTNEED). Per MoE layer of each pass, two
// engine hooks play the simulator's moments:
//
//   - HookRouter (the layer's router input is known): the lookahead scores for
//     the next Depth layers are that input times those layers' router weights
//     (read from the GGUF, as runtime/record computes them); Books.Prefetch
//     shows them to the policy and the reads it admits go to the lanes
//     asynchronously;
//   - HookTopK (the selection is known, before the expert matmuls run): the
//     Books classify hits, in-flight hits and misses, admit the misses
//     (evicting the policy's victims) and hand their reads to the lanes as
//     demand loads; the hook returns only when every selected expert is
//     resident: that wait is the stall.
//
// Stock mode is the ablation's first step, plain llama.cpp: no prefetch and no
// pread; a miss is admitted in the books and reached by page faults inside the
// expert matmul, and the books' LRU victims are evicted with MADV_DONTNEED +
// FADV_DONTNEED so expert pages stay within the budget. The mapping keeps the
// kernel's default read-ahead (MADV_NORMAL), as llama.cpp has it; pages that
// read-ahead brought in for experts the books hold absent are evicted after
// each token (outside its timing) and counted, so the budget holds between
// tokens and the measured peak shows what read-ahead adds.
//
// # Measurements (wall clock, per decode token)
//
//   - wall: the Decode call; stall: time the compute thread waited for loads
//     in the hooks (stock mode: page faults cannot be told apart from compute,
//     so stall is not measured there; major faults are); compute = wall − stall;
//   - bytes and reads: completed pread loads (stock mode: major faults × page
//     size is the nearest measure, reported in the series);
//   - hits, in-flight hits, misses, prefetch recall and precision: the Books'
//     counts, as in the simulator;
//   - resident expert bytes: mincore over every expert at the end of each
//     token (the peak over tokens is Result.PeakResidentBytes);
//   - major faults: getrusage(RUSAGE_SELF) before and after.
//
// Prefill passes run through the same books with counting off. Units: ns and
// bytes. The package needs the build tag llamacpp (cgo) except for Options
// and the series writer.
package live
