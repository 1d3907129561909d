//go:build llamacpp

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// liveOutput is the JSON shape of live: the experiment spec it ran (what
// simulate takes to predict it), the engine's own inputs and the measured
// Result.
type liveOutput struct {
	Spec   experiment.Spec `json:"spec"`
	Inputs liveInputs      `json:"inputs"`
	Result *sim.Result     `json:"result"`
}

type liveInputs struct {
	Model      string `json:"model"`
	Policy     string `json:"policy"`
	CacheBytes int64  `json:"cache_bytes"`
	Tokens     int    `json:"tokens"`
	Prompt     string `json:"prompt"`
	Lanes      int    `json:"lanes"`
	Threads    int    `json:"threads"`
	Stock      bool   `json:"stock"`
}

// runLiveLocal runs live's spec (--spec or the flags) on this machine's
// llama.cpp.
func runLiveLocal(cmd *cobra.Command, f *liveFlags) error {
	o, format, series := f.o, f.format, f.series
	mc, err := record.CheckModel(o.Model)
	if err != nil {
		return err
	}
	m := mc.Spec
	mc.File.Close()
	s, named, err := liveSpec(cmd, f)
	if err != nil {
		return err
	}
	if f.spec == "" { // the live engine's own order, so that simulate on this spec predicts it
		s.CachedFirst, s.Barrier = false, s.Layout == string(sim.LayoutPerExpert)
	}
	notes, err := localSpecChecks(&s, named, m)
	if err != nil {
		return err
	}
	more, err := o.ApplySpec(&s, m)
	if err != nil {
		return err
	}
	if err := checkStockFlags(cmd, o.Stock); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	o.KeepSeries = series != ""
	ctx, stop := atomicfile.NotifyContext(cmd.Context())
	defer stop()
	res, samples, err := live.Run(ctx, o)
	if err != nil {
		return err
	}
	res.Warnings = append(res.Warnings, append(notes, more...)...)
	if f.spec != "" && s.Trace.Synthetic != nil {
		res.Warnings = append(res.Warnings, live.RoutingNote)
	}
	if series != "" {
		if err := live.WriteSeries(series, samples); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", series)
	}
	out := cmd.OutOrStdout()
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(liveOutput{Spec: s,
			Inputs: liveInputs{Model: o.Model, Policy: o.Policy, CacheBytes: o.Cache, Tokens: o.Tokens, Prompt: promptOrDefault(o.Prompt),
				Lanes: o.Lanes, Threads: o.Threads, Stock: o.Stock},
			Result: res,
		})
	}
	mode := fmt.Sprintf("pread on %d I/O lane(s), %d compute thread(s)", o.Lanes, o.Threads)
	if o.Stock {
		mode = fmt.Sprintf("stock mmap (page faults), %d compute thread(s)", o.Threads)
	}
	h := reports.Header{
		{"model", fmt.Sprintf("%s (%d MoE layers × %d experts, top-%d)", m.Name, len(m.Layers), m.Experts, m.TopK)},
		{"device", res.Device},
		{"policy", o.Policy},
		{"cache", fmt.Sprintf("%s (%.0f%% of expert bytes)", sim.FormatBytes(o.Cache), 100*float64(o.Cache)/float64(m.TotalExpertBytes()))},
		{"layout", mode},
		{"prompt", fmt.Sprintf("%q, then %d decode tokens (greedy)", promptOrDefault(o.Prompt), o.Tokens)},
	}
	return reports.WriteResult(out, h, res)
}

// localSpecChecks checks what a spec says that only the caller can: the
// model routes live, so a trace file does not apply; a model the spec names
// must be the GGUF's; a device it names is taken to describe this machine
// (returned as a note).
func localSpecChecks(s *experiment.Spec, named func(string) bool, m *devices.ModelSpec) ([]string, error) {
	var bad []string
	if s.Trace.Path != "" {
		bad = append(bad, "trace "+s.Trace.Path+": the live engine routes with the model (greedy from its prompt); state the decode tokens with a synthetic trace group")
	}
	if named("model") && s.Model != nil && s.Model.Name != m.Name {
		bad = append(bad, fmt.Sprintf("model %s: this GGUF is %s", s.Model.Name, m.Name))
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "; "))
	}
	var notes []string
	if named("device") {
		notes = append(notes, "device "+s.Device.Name+s.Device.File+": the live run measures this machine, which the spec's device is taken to describe")
	}
	return notes, nil
}

// promptOrDefault is the prompt the run prefills.
func promptOrDefault(p string) string {
	if p == "" {
		return live.DefaultPrompt
	}
	return p
}

// liveSpecFlags are the flags a --spec file replaces.
var liveSpecFlags = []string{"policy", "cache", "tokens", "depth", "no-prefetch", "stock"}

// liveSpec is the run's experiment spec: --spec FILE (what simulate takes)
// or live's flags (liveFlagSpec). named reports the groups the spec states
// itself (with flags: none of device, model or trace file).
func liveSpec(cmd *cobra.Command, f *liveFlags) (experiment.Spec, func(string) bool, error) {
	if f.spec == "" {
		s, err := liveFlagSpec(cmd, f)
		return s, func(string) bool { return false }, err
	}
	if err := refuseFlags(cmd, liveSpecFlags, "with --spec: the spec holds the run (edit it instead)"); err != nil {
		return experiment.Spec{}, nil, err
	}
	return readSpecFile(cmd, f.spec, true)
}
