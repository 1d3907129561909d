//go:build llamacpp && linux

package main

import (
	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/runtime/calibrate"
)

// The llama.cpp build serves a GGUF --model with the live engine, and
// measures here (live, calibrate, validate) with it in this process.
func init() {
	newLiveEngine = func(ggufPath string, lanes int) (agent.Engine, error) {
		e, err := agent.NewLiveEngine(ggufPath, version)
		if err != nil {
			return nil, err
		}
		e.Lanes = lanes
		return e, nil
	}
	localEngine = func(path string, o localOptions) (agent.Engine, error) {
		e, err := agent.NewLiveEngine(path, version)
		if err != nil {
			return nil, err
		}
		e.Local, e.Prompt, e.Log = true, o.prompt, o.log
		if o.calibrated != nil {
			e.Calibrated = func(r *calibrate.Result) { o.calibrated(summarize(r)) }
		}
		return e, nil
	}
}

// summarize is what calibrate prints of r.
func summarize(r *calibrate.Result) calSummary {
	big, most := r.Options.Sizes[len(r.Options.Sizes)-1], r.Options.Lanes[len(r.Options.Lanes)-1]
	one, _ := r.Point(big, 1)
	all, _ := r.Point(big, most)
	u := r.Compute.Points[0]
	return calSummary{size: big, lanes: most, oneLane: one.Throughput.Median, allLanes: all.Throughput.Median,
		tokenNS: u.TokenNS.Median, model: u.Name, liveLoad: r.LiveLoad}
}
