package main

import (
	"fmt"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// defaultModel and defaultDevice are the embedded defaults: the published LES
// target (MiniCPM-V 4.7 on an iPhone 17 Pro Max).
const (
	defaultModel  = "minicpm-v-4.7-35b-a3b"
	defaultDevice = "iphone-17-pro-max"
)

// loadDevice resolves --device-file (a user profile) or --device (embedded).
func loadDevice(name, file string) (*devices.Device, error) {
	var p *devices.Profile
	var err error
	if file != "" {
		p, err = devices.ParseProfileFile(file)
	} else {
		p, err = devices.LoadProfile(name)
	}
	if err != nil {
		return nil, err
	}
	return p.Device()
}

// traceInput is a trace in memory with where it came from.
type traceInput struct {
	meta  traces.Meta
	steps []traces.Step
	label string
}

// readTrace loads a Parquet trace fully (the oracle needs its future).
func readTrace(path string) (*traceInput, error) {
	r, err := traces.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	steps, err := traces.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return &traceInput{meta: r.Meta(), steps: steps, label: path}, nil
}

// synthTrace generates the embedded default trace for a model.
func synthTrace(m *devices.ModelSpec, o traces.SynthOptions) (*traceInput, error) {
	meta, steps, err := traces.Synth(m, o)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("synthetic, %d decode tokens, seed %d (skew %.2f, reuse %.3f, lookahead recall %.3f, depth %d)",
		o.Tokens*max(o.Sequences, 1), o.Seed, o.Skew, o.Reuse, o.LookaheadRecall, o.LookaheadDepth)
	return &traceInput{meta: meta, steps: steps, label: label}, nil
}
