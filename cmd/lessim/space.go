package main

import (
	"errors"
	"fmt"

	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// freeSpace tells the free space of an output's file system; tests replace
// it with a fake (run's tests are not parallel).
var freeSpace atomicfile.FreeFunc = atomicfile.FreeSpace

// checkSpace refuses to write --out when need's bytes (and words for them)
// cannot fit in its file system's free space; fix says what to change.
func checkSpace(out string, need func() (int64, string, error), fix string) error {
	var how string
	err := atomicfile.CheckSpace(out, func() (int64, error) {
		n, h, err := need()
		how = h
		return n, err
	}, freeSpace)
	var se *atomicfile.SpaceError
	if !errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("--out %s: %s, more than the %s free in %s: %s", out, how, sim.FormatBytes(se.Free), se.Dir, fix)
}

// traceSpaceMargin is the share added to traces.EstimateSize's estimate.
const traceSpaceMargin = 0.05

// checkTraceSpace refuses to write a trace of steps steps to out when it
// cannot fit, and returns the source to write it from (traces.EstimateSize's,
// which yields the steps it measured again).
func checkTraceSpace(out string, meta traces.Meta, steps int64, src traces.Source, fix string) (traces.Source, error) {
	return traceSpace(out, meta, steps, fmt.Sprintf("%d tokens", steps), src, fix)
}

// traceSpace is checkTraceSpace with words for the step count.
func traceSpace(out string, meta traces.Meta, steps int64, count string, src traces.Source, fix string) (traces.Source, error) {
	rest := src
	err := checkSpace(out, func() (int64, string, error) {
		e, r, err := traces.EstimateSize(meta, src, steps)
		if err != nil {
			return 0, "", err
		}
		rest = r
		n := int64(float64(e.Bytes()) * (1 + traceSpaceMargin))
		return n, fmt.Sprintf("the trace needs about %s (%s × %s, measured on the first %d, plus %.0f%%)",
			sim.FormatBytes(n), count, sim.FormatBytes(int64(e.PerStep)), e.Sampled, 100*traceSpaceMargin), nil
	}, fix)
	return rest, err
}
