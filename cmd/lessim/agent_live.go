//go:build llamacpp && linux

package main

import "github.com/lessim/lessim/agent"

// The llama.cpp build serves a GGUF --model with the live engine.
func init() {
	newLiveEngine = func(ggufPath string) (agent.Engine, error) {
		return agent.NewLiveEngine(ggufPath, version)
	}
}
