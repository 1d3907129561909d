package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestNumberFlagsOneWording: every number flag of every command refuses a
// non-finite or out-of-range value in numtext's words (as simulate's
// options do), never with strconv's internal message, and takes a plain
// value.
func TestNumberFlagsOneWording(t *testing.T) {
	numeric := map[string]string{"float": "0.5", "float64": "0.5", "float32": "0.5", "int": "3", "uint": "3", "uint64": "3", "int64": "3"}
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			ok, isNum := numeric[f.Value.Type()]
			if !isNum {
				return
			}
			n++
			name := c.CommandPath() + " --" + f.Name
			bads := []string{"1e309", "99999999999999999999", "-1e30", "x"}
			if strings.HasPrefix(f.Value.Type(), "float") {
				bads = []string{"1e309", "-1e309", "NaN", "+Inf", "x"}
			}
			for _, bad := range bads {
				err := f.Value.Set(bad)
				if err == nil || strings.Contains(err.Error(), "strconv") || !strings.HasPrefix(err.Error(), `"`+bad+`" is`) {
					t.Errorf("%s %s: %v, want numtext's wording", name, bad, err)
				}
			}
			if err := f.Value.Set(ok); err != nil {
				t.Errorf("%s %s: %v", name, ok, err)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	if n < 30 {
		t.Errorf("only %d number flags found", n)
	}
}

// TestNumberFlagHelp: the number flags' help reads as pflag's own (type
// name and default).
func TestNumberFlagHelp(t *testing.T) {
	out := runCLI(t, "", "trace", "synth", "--help")
	for _, want := range []string{"--skew float ", "(default 1.3)", "--tokens int ", "--seed uint "} {
		if !strings.Contains(out, want) {
			t.Errorf("trace synth --help lacks %q:\n%s", want, out)
		}
	}
}
