package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// noArgs refuses arguments (cobra's NoArgs calls a stray word, most often
// a value that lacks its flag, an "unknown command").
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments (got %q): every input is a flag (see %s --help)", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return nil
}

// oneArg requires exactly one argument, named as the Use line names it.
func oneArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		_, name, _ := strings.Cut(cmd.Use, " ")
		return fmt.Errorf("%s takes one argument, %s (got %d): see %s --help", cmd.CommandPath(), name, len(args), cmd.CommandPath())
	}
	return nil
}
