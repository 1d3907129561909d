//go:build llamacpp && linux

package main

import (
	"context"

	"github.com/lessim/lessim/validation"
)

// runValidateLocal validates against llama.cpp on this machine.
func runValidateLocal(ctx context.Context, o validation.Options) (*validation.Report, error) {
	return validation.Run(ctx, o)
}
