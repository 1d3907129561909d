package calibrate

import (
	"fmt"
	"slices"

	"github.com/lessim/lessim/sim"
)

// Summary is the spread of repeated samples of one quantity.
type Summary struct {
	N              int
	Median, Q1, Q3 float64
}

// IQR is the interquartile range Q3 − Q1.
func (s Summary) IQR() float64 { return s.Q3 - s.Q1 }

// Summarize returns the median and quartiles (nearest rank) of xs.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Summary{N: len(s), Median: sim.Percentile(s, 50), Q1: sim.Percentile(s, 25), Q3: sim.Percentile(s, 75)}
}

// describe is the spread part of a source: "N samples, median X, IQR Y", with
// format turning a value into text with its unit.
func (s Summary) describe(format func(float64) string) string {
	noun := "samples"
	if s.N == 1 {
		noun = "sample"
	}
	return fmt.Sprintf("%d %s, median %s, IQR %s", s.N, noun, format(s.Median), format(s.IQR()))
}

// LiveLoad is a least-squares line of per-token compute time (wall − stall)
// against loads per token over live runs of lessim's engine.
type LiveLoad struct {
	PerLoadNS, PerLoadSE float64 // slope and its standard error
	InterceptNS          float64 // per-token compute with no loads
	N                    int     // tokens
	R2                   float64
	Runs                 []string // the live runs, described
	// Threads2NS is the intercept of the same line at 2 compute threads
	// (a third run, cache 100%), 0 with one CPU or when it could not be
	// fitted; Threads2Run describes that run.
	Threads2NS  float64
	Threads2Run string
}
