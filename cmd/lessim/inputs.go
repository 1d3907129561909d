package main

import "github.com/lessim/lessim/experiment"

// defaultModel and defaultDevice are the embedded defaults (the published LES
// target: MiniCPM-V 4.7 on an iPhone 17 Pro Max).
const (
	defaultModel  = experiment.DefaultModel
	defaultDevice = experiment.DefaultDevice
)
