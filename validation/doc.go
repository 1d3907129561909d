// Package validation checks the simulator against the real engine: for each
// policy × cache size it simulates a recorded trace with a calibrated device
// profile, measures the same point live (runtime/live, several repeats) and
// compares the two.
//
// The package is pure Go. Run measures on an agent.Engine: the live engine
// in this process (its caller builds it with llama.cpp) or a device agent's
// client; either records the trace and runs the
// points, this side simulates. A point's measured run is one experiment
// spec (MeasuredSpec), with a host group on this machine.
//
// The live runs go in rounds, one run of every point per round (after one
// run of each fit point, with Options.Fit); round r of n points starts at
// point r mod n and goes round (RoundOrder), so the first run of a round,
// which measures slower, falls on every point in turn. With Options.Fit
// the fit runs' per-token series (here or from the agent: run.series) are
// fitted the same way (fit.FromRuns).
//
// Units: tokens per second for speed, nanoseconds for per-token latency, a
// fraction in [0, 1] for hit rates. A point's error is
// 100 × (predicted − measured) / measured tokens/s, where measured is the
// mean over the repeats; MAPE is the mean of the absolute errors. The
// ranking of a cache size is its policies ordered by tokens/s, fastest
// first; it is preserved when the predicted and measured orders are equal.
package validation
