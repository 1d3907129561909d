//go:build !llamacpp

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// runLiveLocal needs llama.cpp; without it live runs only on a device agent.
func runLiveLocal(*cobra.Command, *liveFlags) error {
	return errors.New("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to run live here, or run on a device agent with --target")
}
