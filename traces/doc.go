// Package traces holds lessim's router traces: which experts a MoE model's
// router chose, token by token and layer by layer, plus what a scheduler could
// have known in advance (lookahead scores). The simulator replays them; the
// recorder (runtime), the synthetic generator and the importers produce them.
//
// # The trace model
//
// A trace is a sequence of Steps, one per token the engine processed, in
// execution order. A Step carries the token's sequence index, position, phase
// (prefill or decode) and pass (tokens the engine ran in one forward pass share
// a pass), and one LayerStep per MoE layer of the model, in layer order:
// Layers[i] is MoE layer i of Meta.Model.Layers. A LayerStep holds the selected
// experts in rank order and, when recorded, their gate weights, the router
// logits over all experts, lookahead scores (the router of layer i+d applied to
// layer i's router input, for d = 1..Meta.LookaheadDepth), the router input
// itself, the recording engine's residency flags and its measured compute time
// (nanoseconds).
//
// Meta describes the trace as a whole: the full ModelSpec (shape, exact expert
// byte sizes), which optional vectors are present, and provenance. A trace file
// is self-describing: Meta travels inside it.
//
// A Source yields steps like bufio.Scanner (Next, Step, Err); the Step it
// returns is valid until the next call to Next. Reader is the file Source;
// NewSliceSource wraps steps held in memory; ReadAll deep-copies a Source into
// a slice. Validate states what a valid step is; Writer and Reader both apply
// it, so a file written by lessim always reads back, and a file edited by hand
// or by another tool is checked row by row.
//
// # Trace files
//
// A trace file is Parquet (written with arrow-go v18) with one row per token
// per MoE layer, sorted by token then layer, so every tool that reads Parquet
// (DuckDB, pandas, polars, Spark) can query it. Columns: seq, pos, phase, pass,
// layer, experts, weights, logits (if Meta.HasLogits), lookahead_1 ..
// lookahead_D (D = Meta.LookaheadDepth), router_input (if
// Meta.HasRouterInputs), hit, compute_ns. Absent vectors are nulls; lookahead
// depths that would score a layer past the last one are always null. Meta is
// stored as JSON in the file's key-value metadata under MetaKey, the schema
// version under VersionKey; a reader decodes it strictly (unknown and repeated
// keys are errors) and checks its model spec against the model bounds
// (devices.ModelSpec.RecordedProblems), as a writer does before writing. The
// full format, with units and examples of reading it from DuckDB and pandas,
// is docs/trace-format.md.
//
// Files are written deterministically (same steps, same bytes): no timestamps,
// row groups of whole tokens sized from Meta alone (about 64 MiB of
// uncompressed rows, at most 65,536 rows), zstd compression, BYTE_STREAM_SPLIT
// for float vectors. EstimateSize predicts a file's size before it is written
// by writing its first SizeSample steps to memory with the same settings and
// extrapolating the bytes per step (commands check it against the free space).
//
// Reader streams a file one record batch at a time (about 8 MiB of rows) and
// reuses its buffers between steps, so memory stays flat however long the
// trace. Its errors carry the file name and the 0-based row number (as DuckDB's
// file_row_number counts): "trace.parquet: row 1234: layer 5 after layer 7
// (rows must be sorted by token then layer)". It never panics on bad input;
// as a last resort it turns a panic inside arrow-go into an error.
//
// # Synthetic traces, statistics and imports
//
// Synth generates a trace of any model shape, fully seeded: per layer a Zipf
// popularity over a random permutation of experts whose exponent rises with
// depth (early layers route almost uniformly, as recorded traces show),
// previous-token reuse with a stated probability (default 0.45), and lookahead
// scores whose top-k recalls a stated share of the next layer's experts
// (default 0.807, minus 3.75 points per extra depth). The defaults come from the
// public measurements cited in DESIGN.md; synth.go says which.
//
// ComputeStats measures the same statistics on any trace (formulas at the top
// of stats.go): next-token reuse, reuse distance, per-layer popularity and
// concentration, static hot-list recall, lookahead recall per depth and the
// recorded hit rate, so a synthetic trace can be checked against a recorded one.
//
// ImportBMoE reads the route_trace v1 CSV of BigMoeOnEdge
// (github.com/Helldez/BigMoeOnEdge, Apache-2.0), including its cache residency
// flags. Replaying an import through a byte-budgeted LRU whose recency follows
// each expert's last use in a batch reproduces every recorded flag.
//
// PredictLookahead adds lookahead scores to traces that have none, from a
// stated predictor: each true next-layer expert scores high with probability
// Recall, plus FalsePositives wrong experts on average, seeded. It is a model
// of a predictor, not a measurement, and Meta.Info says so.
//
// IndexLookahead precomputes each lookahead vector's best candidates once per
// trace, so policies need not rescan every score at every layer of every
// simulated run.
//
// # Long traces
//
// OpenColumns reads only the columns a run needs (Columns skips logits,
// router inputs, lookahead). A trace written with Meta.LookaheadTop = N stores
// lookahead compactly: per row and depth the N best candidates, their scores
// and the vector's softmax sum, returned by the Reader as LookaheadIndex (with
// empty Lookahead vectors), about a tenth of the file and a hundredth of the
// memory of full vectors for 256 experts. MemoryBytes estimates what a loaded
// trace holds, so a run can be refused before it is loaded.
package traces
