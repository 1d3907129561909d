//go:build !(llamacpp && linux)

package main

import (
	"context"
	"errors"

	"github.com/lessim/lessim/validation"
)

// runValidateLocal needs llama.cpp; a remote validation (--target) works in
// every build.
func runValidateLocal(context.Context, validation.Options) (*validation.Report, error) {
	return nil, errors.New("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to validate against the real engine here; --target validates on a device agent in every build")
}
