package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// noArgs refuses arguments to a command that takes none. noArgs calls
// a stray word an "unknown command", which misleads on a leaf command: it
// has no subcommands, and the word is most often a value that lacks its
// flag.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments (got %q): every input is a flag (see %s --help)", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return nil
}

// oneArg requires exactly one argument, named as the command's Use line
// names it ("show NAME|FILE.yaml"), instead of cobra's "accepts 1 arg(s),
// received 2".
func oneArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		_, name, _ := strings.Cut(cmd.Use, " ")
		return fmt.Errorf("%s takes one argument, %s (got %d): see %s --help", cmd.CommandPath(), name, len(args), cmd.CommandPath())
	}
	return nil
}
