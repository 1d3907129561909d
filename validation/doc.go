// Package validation checks the simulator against the real engine: for each
// policy × cache size it simulates a recorded trace with a calibrated device
// profile, measures the same point live (runtime/live, several repeats) and
// compares the two.
//
// The statistics (Summarize), the text table (WriteTable), the results rows
// (Rows, WriteRows) and the scatter plot (WritePlot) are pure Go. Run, which
// records the trace and drives llama.cpp, needs the llamacpp build tag.
// RunRemote is pure Go: a device agent (package agent) records the trace and
// runs the points, this side simulates. Both share one loop over a Runner
// (record, then simulate every point, then the live repeats).
//
// The live runs go in rounds, one run of every point per round (after one
// run of each fit point, with Options.Fit); round r of n points starts at
// point r mod n and goes round (RoundOrder), so the first run of a round,
// which measures slower, falls on every point in turn. With Options.Fit
// the fit runs' per-token series come from this machine's runtime/live or,
// with a target, from the agent (protocol version 4, run.series), and are
// fitted the same way (fit.FromRuns).
//
// Units: tokens per second for speed, nanoseconds for per-token latency, a
// fraction in [0, 1] for hit rates. A point's error is
// 100 × (predicted − measured) / measured tokens/s, where measured is the
// mean over the repeats; MAPE is the mean of the absolute errors. The
// ranking of a cache size is its policies ordered by tokens/s, fastest
// first; it is preserved when the predicted and measured orders are equal.
package validation
