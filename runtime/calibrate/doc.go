// Package calibrate measures this machine and writes a device profile for it in
// the schema of devices/profiles/*.yaml, so the simulator's predictions can be
// checked against the real engine here (lessim calibrate).
//
// # What is measured, and how
//
//   - flash: random O_DIRECT reads of the model file (its file system is the
//     "flash"), page-aligned offsets from a seeded PCG, by read size and lanes
//     (goroutines each with one read in flight): total bytes ÷ wall time per
//     sample. single_lane takes the 1-lane points, aggregate the points at the
//     most lanes; latency is the intercept of time per read against size through
//     the 1-lane medians (least squares), kept below every point's time per
//     read; lanes is the fewest lanes within 5% of the best throughput at the
//     largest size. A file system that refuses O_DIRECT (tmpfs) is an error
//     before anything is measured or written;
//   - page_size: getpagesize; read_ahead: sysfs queue/read_ahead_kb of the disk
//     under the model; fault_cost: thread CPU time per minor fault touching a
//     MADV_RANDOM mapping of the model whose pages are cached;
//   - memory: ram is MemTotal and reserve MemTotal − MemAvailable in
//     /proc/meminfo; bandwidth is a streaming read of a buffer by one goroutine
//     per CPU summing 64-bit words (a lower bound of the DRAM peak);
//   - compute: llama.cpp decode, 1 thread, every weight read into the page cache
//     first, on the model and on synthetic variants of its shape (2 and 4 layers,
//     top-1 and its top-k; runtime/gguf writes them, for qwen3moe and olmoe in
//     F16 or Q8_0). The simulator charges a token Σ over layers (dense bytes +
//     top-k × expert bytes) ÷ (bandwidth × efficiency), plus layers ×
//     layer_overhead, plus head bytes ÷ the same rate; least squares of the measured times per
//     token against (layers, bytes per token) give layer_overhead and the rate,
//     and efficiency = rate ÷ bandwidth (capped at 1). flops is FLOPs per token
//     ÷ the time one more token adds to a pass (slope over passes of 1, 2, 4
//     and 8 tokens), so batched passes (speculative decoding) cost what they
//     cost here;
//   - the compute-thread CPU cost of a synchronous expert load (pread from a
//     cold page cache: fixed + per byte, least squares) has no profile field
//     yet: it is written as a comment at the top of the profile.
//
// Every value's source reads "measured by lessim calibrate on <host> at
// <time>: N samples, median X, IQR Y" with what was measured; what cannot be
// measured says "assumed:" and why (layer_overhead when the model's shape cannot
// be varied; latency with a single read size). The profile is validated by
// devices before it is written, atomically (temporary file in the target folder,
// sync, rename).
//
// Units: bytes, bytes per second, nanoseconds, FLOP/s; the profile writes them
// with units (MiB/s, GB/s, us, ms, GFLOPS).
//
// This package reads the wall clock and the file system; the decode timing needs
// llama.cpp (build tag llamacpp).
package calibrate
