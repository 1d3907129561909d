//go:build !llamacpp

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newLiveCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "live",
		Short:              "Run a policy against the real llama.cpp engine (needs a build with -tags llamacpp)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to run live")
		},
	}
}
