package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runtime/record"
	"github.com/spf13/cobra"
)

// The checks every command makes of its flags before any work: a flag that
// does not apply, an empty value, an output that is an input; and the
// values of the flags the user set.

// refuseFlags fails when the user set any of names: they do not apply. It
// names every one set, as experiment's options do.
func refuseFlags(cmd *cobra.Command, names []string, why string) error {
	var errs []error
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			errs = append(errs, fmt.Errorf("--%s does not apply %s", n, why))
		}
	}
	return errors.Join(errs...)
}

// flagValues is the flags among names that the user set, by name, with
// their values as text: a flag left at its default is not there, so an
// option table (experiment.FromOptions) applies its own default and its
// does-not-apply rules only to what was given.
func flagValues(cmd *cobra.Command, names ...string) map[string]string {
	values := map[string]string{}
	for _, n := range names {
		if fl := cmd.Flags().Lookup(n); fl.Changed {
			values[n] = fl.Value.String()
		}
	}
	return values
}

// refuseEmpty refuses a flag among names that was given an empty value: a
// file name or prefix left empty by a script would otherwise silently mean
// "not given".
func refuseEmpty(cmd *cobra.Command, names ...string) error {
	var errs []error
	for _, n := range names {
		if fl := cmd.Flags().Lookup(n); fl.Changed && strings.TrimSpace(fl.Value.String()) == "" {
			errs = append(errs, fmt.Errorf("--%s: empty value (%s)", n, fl.Usage))
		}
	}
	return errors.Join(errs...)
}

// refuseBlank refuses flag name given as blank text, which would silently
// mean the same as leaving it out; the message says what to give (what) and
// what leaving it out gives (dflt).
func refuseBlank(cmd *cobra.Command, name, what, dflt string) error {
	if fl := cmd.Flags().Lookup(name); fl.Changed && strings.TrimSpace(fl.Value.String()) == "" {
		return fmt.Errorf("--%s is empty: give %s, or leave --%s out for %s", name, what, name, dflt)
	}
	return nil
}

// checkOutputs refuses an output file that is one of the inputs, or that
// another output also writes, before any work: a run must never overwrite
// what it reads.
func checkOutputs(outputs []string, inputs ...string) error {
	var errs []error
	for i, o := range outputs {
		errs = append(errs, atomicfile.CheckDistinct(o, append(slices.Clone(inputs), outputs[:i]...)...))
	}
	return errors.Join(errs...)
}

// checkOutput checks, before any long work, the file that flag names (path):
// it is none of inputs (atomicfile.CheckDistinct) and it can be written
// (atomicfile.CheckTarget: not a folder or a device, in a folder that exists
// and accepts files). A command that measures or decodes for minutes must
// not fail only when it writes its result.
func checkOutput(flag, path string, inputs ...string) error {
	if err := atomicfile.CheckDistinct(path, inputs...); err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	if err := atomicfile.CheckTarget(path); err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	return nil
}

// checkThreads refuses --threads outside 1..record.MaxThreads, with one
// message for every command that takes it (record, live). NB: 0 is refused,
// not read as 1: the libraries take a zero Threads as their default, but a
// user who types --threads 0 asked for no thread, or for "all cores", and
// neither is what would run.
func checkThreads(n int) error {
	if record.CheckThreads(n) != nil {
		return fmt.Errorf("--threads %d: want 1..%d llama.cpp compute threads (each is an OS thread; more than the machine's cores only slows decoding)", n, record.MaxThreads)
	}
	return nil
}
