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

// checkSpace refuses, before anything is written, to write --out when the
// bytes need returns cannot fit in the free space of its file system. need
// also says how it got its number ("the trace needs about ..."); it is called
// only when the free space is known. fix says what to change.
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

// traceSpaceMargin is the share added to a trace's measured size estimate
// (traces.EstimateSize, within 1% on the shapes its test checks) before it is
// compared with the free space.
const traceSpaceMargin = 0.05

// checkTraceSpace refuses to write a trace of meta and steps steps to out
// when it cannot fit (checkSpace), and returns the source to write it from:
// src itself when the free space is not known, else the source
// traces.EstimateSize hands back after measuring the bytes per token on
// src's first traces.SizeSample steps, which yields those steps again (so
// they are generated or read once).
func checkTraceSpace(out string, meta traces.Meta, steps int64, src traces.Source, fix string) (traces.Source, error) {
	return traceSpace(out, meta, steps, fmt.Sprintf("%d tokens", steps), src, fix)
}

// traceSpace is checkTraceSpace with the message's words for the step
// count (count: "1000 tokens").
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
