//go:build !llamacpp

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// calibrateHost needs llama.cpp to time decoding.
func calibrateHost(*cobra.Command, *hostFlags, string) error {
	return errors.New("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to measure this machine; --from-run works in every build")
}
