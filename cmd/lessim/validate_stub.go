//go:build !(llamacpp && linux)

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "validate",
		Short:              "Check the simulator against live runs (needs a build with -tags llamacpp)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to validate against the real engine")
		},
	}
}
