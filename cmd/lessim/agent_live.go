//go:build llamacpp && linux

package main

import (
	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/runtime/calibrate"
)

// The llama.cpp build serves a GGUF --model with the live engine, and
// measures here (live, calibrate, validate) with it in this process.
func init() {
	liveEngine = func(path string, o liveOptions) (agent.Engine, error) {
		e, err := agent.NewLiveEngine(path, version)
		if err != nil {
			return nil, err
		}
		e.Local, e.Lanes, e.Prompt, e.Log = o.local, o.lanes, o.prompt, o.log
		if o.calibrated != nil {
			e.Calibrated = func(r *calibrate.Result) { o.calibrated(r.WriteSummary) }
		}
		return e, nil
	}
}
