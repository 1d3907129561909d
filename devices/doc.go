// Package devices describes the hardware and the models lessim simulates:
// device profiles (memory, compute, flash) with a source for every number,
// and MoE model specs (per-layer expert sizes from quant types).
//
// # Profiles
//
// A profile is a YAML file; the built-in ones are embedded from profiles/
// (ProfileNames, LoadProfile) and a user's own is read with ParseProfileFile.
// Every number is written as
//
//	ram: {value: 12 GiB, source: "DESIGN.md Devices: ..."}
//
// where value is a plain number ("4", "0.6", "60%") for dimensionless fields
// or a number with a unit for everything else — sizes B, KB, MB, GB, TB (powers
// of 1000) and KiB, MiB, GiB, TiB (powers of 1024); rates the same followed by
// "/s"; durations ns, us (or µs), ms, s; compute FLOPS, GFLOPS, TFLOPS, PFLOPS. A
// dimensioned value without a unit is an error, so no number is read in the
// wrong unit. Profile.Device resolves the profile into a Device in SI base
// units: bytes, bytes per second, nanoseconds, FLOP/s.
//
// Every number needs a source: either a citation (a spec sheet, paper or
// measurement, e.g. "DESIGN.md Devices: LPDDR5X-9600 ≈ 75.8 GB/s, reported
// for the A19 Pro") or a text starting with "assumed:" that says why that
// value was chosen. Device.Assumed lists the dotted field names whose source
// is an assumption, so simulation results can carry them as warnings. A user
// replaces assumptions by measuring the device (`lessim calibrate`),
// by fitting a few measured runs, or by copying a profile, editing it and
// passing it with --device-file.
//
// Sections: memory (ram; reserve, the RAM the OS, other apps and the runtime
// keep from the model; peak bandwidth; efficiency, the fraction of peak that
// decode reaches, in (0,1]; optional app_limit, the memory the OS lets the
// app keep resident (iOS jetsam), at most ram, and runtime, the app's own
// memory besides the model, counted against it: see the simulator's memory
// pressure); compute (sustained FLOPS; a fixed per-layer
// overhead); flash (see below). Profile.Validate reports every problem at
// once — missing values or sources, unknown or duplicate keys, merge keys
// (<<), a second YAML document, unit errors, values out of range, reserve >=
// ram, empty or unsorted curves — one per line as "file: field.path: reason".
//
// # Bounds
//
// Every profile number, and every count, size and FLOP figure of a model
// spec, must lie within a plausible range: Bounds returns the one table
// (field, range, reason) that validation, the tests and
// docs/profile-bounds.md all read. A value outside is refused naming the
// field, the value as written, the range and the reason, so a unit typo such
// as "75.8 B/s" cannot pass. NaN and infinities are refused at parse time.
// The ranges also keep time exact: at their slowest rates and largest sizes,
// one conversion of bytes or FLOPs into nanoseconds stays below 2^53 ns.
// What validation accepts but finds suspicious (a flash curve whose
// throughput falls as reads grow) is listed by Profile.Warnings and
// Device.Warnings, for results to show.
//
// # Flash model
//
// At most flash.lanes reads are in flight (the engine's queue depth). A read
// first holds its lane for flash.latency, then transfers; the k transfers in
// progress share the device, each at min(SingleLane(size), Aggregate(size)/k),
// so lanes beyond the knee add queueing, not bandwidth. Curves interpolate
// linearly in log2(read size) and hold flat beyond their ends (Interp).
//
// Curve points in YAML are what a read benchmark reports: read size, the
// reads in flight during the measurement (lanes, 1 if omitted) and the total
// throughput, latency included. Profile.Device converts each point into the
// transfer rate the model needs: n reads of size S took T = n·S/measured
// each, of which flash.latency passed before the transfer, so the transfer
// rate is n·S / (T − latency). With it, n lanes issuing reads in lockstep
// reproduce every measured point exactly; a point whose time per read is not
// above the latency is an error. The single-lane curve takes points measured
// at one lane; the aggregate curve takes saturated points (many lanes).
//
// page_size, read_ahead and fault_cost describe the stock mmap path (an
// expert reached through page faults): the OS page, the window one fault
// reads, and the CPU time one fault costs on the compute thread.
//
// # Model specs
//
// A ModelSpec gives, per MoE layer, the bytes of one routed expert (the sum of
// its gate, up and down slices, each rows × row-length weights at its ggml
// quant block size), the resident dense bytes (attention, router, norms,
// shared experts) and the work per token at 2 FLOPs per weight. BuildSpec
// lays out any MoE shape (used for synthetic models and GGUF headers);
// LookupModel returns the built-in specs: the reference model MiniCPM-V 4.7
// 35B-A3B (text backbone qwen3_5_moe) in its Q4_K_M and mixed Q3_K-experts
// variants, and Qwen3-30B-A3B Q4_K_M, the model of the shared reference
// router trace. Sources: DESIGN.md "Reference model", the models' config.json
// files and llama.cpp's Q4_K_M tensor-type rules (minicpm.go, qwen3.go,
// quantrules.go). Checks: MiniCPM's expert sizes are exactly DESIGN.md's
// (1,351,680 / 1,769,472 / 2,039,808 bytes) and its totals within 0.05 GiB of
// 12.9 / 18.2 / 1.55 GiB; Qwen3-30B-A3B's per-layer expert and dense bytes
// equal those recorded in the reference trace.
//
// Not modelled: attention-score and recurrent-state work (context dependent,
// small at phone context lengths), and Gated DeltaNet state memory (fixed per
// sequence, about 64 MiB for MiniCPM, not per token).
package devices
