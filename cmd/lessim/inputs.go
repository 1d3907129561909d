package main

import "github.com/lessim/lessim/experiment"

// defaultModel is the embedded default model (the published LES target).
const defaultModel = experiment.DefaultModel
