package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runtime/record"
)

// refuseFlags names every one of names the user set: they do not apply.
func refuseFlags(cmd *cobra.Command, names []string, why string) error {
	var errs []error
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			errs = append(errs, fmt.Errorf("--%s does not apply %s", n, why))
		}
	}
	return errors.Join(errs...)
}

// flagValues is the values of the flags among names that the user set.
func flagValues(cmd *cobra.Command, names ...string) map[string]string {
	values := map[string]string{}
	for _, n := range names {
		if fl := cmd.Flags().Lookup(n); fl.Changed {
			values[n] = fl.Value.String()
		}
	}
	return values
}

// refuseEmpty refuses a flag among names given an empty value, which
// would silently mean "not given".
func refuseEmpty(cmd *cobra.Command, names ...string) error {
	var errs []error
	for _, n := range names {
		if fl := cmd.Flags().Lookup(n); fl.Changed && strings.TrimSpace(fl.Value.String()) == "" {
			errs = append(errs, fmt.Errorf("--%s: empty value (%s)", n, fl.Usage))
		}
	}
	return errors.Join(errs...)
}

// refuseBlank refuses flag name given as blank text, saying what to give
// (what) and what leaving it out gives (dflt).
func refuseBlank(cmd *cobra.Command, name, what, dflt string) error {
	if fl := cmd.Flags().Lookup(name); fl.Changed && strings.TrimSpace(fl.Value.String()) == "" {
		return fmt.Errorf("--%s is empty: give %s, or leave --%s out for %s", name, what, name, dflt)
	}
	return nil
}

// checkOutputs refuses an output that is an input or another output.
func checkOutputs(outputs []string, inputs ...string) error {
	var errs []error
	for i, o := range outputs {
		errs = append(errs, atomicfile.CheckDistinct(o, append(slices.Clone(inputs), outputs[:i]...)...))
	}
	return errors.Join(errs...)
}

// checkOutput checks, before any long work, that path (flag's) is none of
// inputs and can be written (atomicfile.CheckTarget).
func checkOutput(flag, path string, inputs ...string) error {
	if err := atomicfile.CheckDistinct(path, inputs...); err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	if err := atomicfile.CheckTarget(path); err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	return nil
}

// checkThreads refuses --threads outside 1..record.MaxThreads. NB: 0 is
// refused, not taken as the libraries' default: neither "no thread" nor
// "all cores" is what would run.
func checkThreads(n int) error {
	if record.CheckThreads(n) != nil {
		return fmt.Errorf("--threads %d: want 1..%d llama.cpp compute threads (each is an OS thread; more than the machine's cores only slows decoding)", n, record.MaxThreads)
	}
	return nil
}

// outputFormats are the values of every output --format flag.
var outputFormats = []string{"json", "text"}

// checkFormat refuses an output --format other than text or json.
func checkFormat(format string) error {
	if !slices.Contains(outputFormats, format) {
		return fmt.Errorf("unknown format %q (valid: %s)", format, strings.Join(outputFormats, ", "))
	}
	return nil
}

// printJSON writes v to w as indented JSON, as every --format json does.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

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
