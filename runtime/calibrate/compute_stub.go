//go:build !llamacpp || !linux

package calibrate

import (
	"context"
	"errors"
)

func measureLiveLoad(context.Context, *Options, func(string, ...any)) (*LiveLoad, error) {
	return nil, errors.New("calibrate: live runs need llama.cpp: build lessim with `make build` (-tags llamacpp)")
}

func measureCompute(context.Context, *Options, func(string, ...any)) (*Compute, error) {
	return nil, errors.New("calibrate: timing decode needs llama.cpp: build lessim with `make build` (-tags llamacpp)")
}

func measureThreads(*Options, *Compute, func(string, ...any)) (Summary, error) {
	return Summary{}, errors.New("calibrate: timing decode needs llama.cpp: build lessim with `make build` (-tags llamacpp)")
}
