//go:build !llamacpp

package main

import (
	"errors"
	"slices"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/runtime/gguf"
)

// ggmlQuantize is nil: model synth writes only f16 and q8_0 without llama.cpp.
var ggmlQuantize gguf.Quantizer

func newRecordCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "record",
		Short:              "Record router traces from llama.cpp (needs a build with -tags llamacpp)",
		DisableFlagParsing: true,
		// NB: flags are not parsed (this build has none of record's), so
		// --help reaches RunE: it still shows the help.
		RunE: func(cmd *cobra.Command, args []string) error {
			if slices.Contains(args, "--help") || slices.Contains(args, "-h") {
				return cmd.Help()
			}
			return errors.New("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to record traces")
		},
	}
}
