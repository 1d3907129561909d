// Package cputime reads the process's CPU time (user + system, every
// thread), which benchmarks report beside wall time: on a shared, busy
// machine wall time is not the run's own, CPU time mostly is.
package cputime

// Seconds is the process's user + system CPU time so far, in seconds; 0
// when the system does not say.
func Seconds() float64 { return seconds() }
