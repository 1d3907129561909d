//go:build llamacpp && linux

package main

import (
	"io"

	"github.com/lessim/lessim/agent"
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
	localEngine = func(path, prompt string, log io.Writer) (agent.Engine, error) {
		e, err := agent.NewLiveEngine(path, version)
		if err != nil {
			return nil, err
		}
		e.Local, e.Prompt, e.Log = true, prompt, log
		return e, nil
	}
}
