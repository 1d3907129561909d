//go:build !llamacpp

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLiveCmd without llama.cpp runs only on a device agent (--target).
func newLiveCmd() *cobra.Command {
	var f liveFlags
	cmd := &cobra.Command{
		Use:     "live",
		Short:   "Run a policy on a device agent (--target); local runs need a build with -tags llamacpp",
		Long:    liveLong,
		Example: liveExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLiveFormat(f.format); err != nil {
				return err
			}
			if f.target == "" {
				return errors.New("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to run live here, or run on a device agent with --target")
			}
			return runLiveRemote(cmd, &f)
		},
	}
	addLiveFlags(cmd, &f)
	return cmd
}
