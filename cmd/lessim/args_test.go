package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestLeafCommandsSayTheyTakeNoArguments: every leaf command refuses a
// stray argument by saying what it takes, never "unknown command" (it has
// no subcommands) nor cobra's "accepts 1 arg(s)".
func TestLeafCommandsSayTheyTakeNoArguments(t *testing.T) {
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			for _, sub := range c.Commands() {
				walk(sub)
			}
			return
		}
		if !c.Runnable() || c.DisableFlagParsing || c.Name() == "help" {
			return
		}
		n++
		if c.Args == nil {
			t.Errorf("%s: no Args check", c.CommandPath())
			return
		}
		err := c.Args(c, []string{"stray", "words"})
		if err == nil || !strings.HasPrefix(err.Error(), c.CommandPath()+" takes ") {
			t.Errorf("%s stray words: %v", c.CommandPath(), err)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	if n < 15 {
		t.Errorf("only %d leaf commands found", n)
	}
	for args, want := range map[string]string{
		"simulate extra-arg": `lessim simulate takes no arguments (got "extra-arg"): every input is a flag (see lessim simulate --help)`,
		"models show a b":    "lessim models show takes one argument, NAME[:VARIANT] (got 2): see lessim models show --help",
	} {
		if got := runCLI(t, "", strings.Fields(args)...); got != "lessim: "+want+"\n" {
			t.Errorf("%s: %q, want %q", args, got, want)
		}
	}
}
