//go:build llamacpp && linux

package main

import "github.com/lessim/lessim/agent"

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
		e.Local, e.Prompt, e.Log, e.Calibrated = true, o.prompt, o.log, o.calibrated
		return e, nil
	}
}
