//go:build llamacpp

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// liveOutput is the JSON shape of live: the inputs and the measured Result.
type liveOutput struct {
	Inputs liveInputs  `json:"inputs"`
	Result *sim.Result `json:"result"`
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

// runLiveLocal runs live's flags on this machine's llama.cpp.
func runLiveLocal(cmd *cobra.Command, f *liveFlags) error {
	o, cache, format, series := f.o, f.cache, f.format, f.series
	mc, err := record.CheckModel(o.Model)
	if err != nil {
		return err
	}
	m := mc.Spec
	mc.File.Close()
	if strings.TrimSpace(cache) == "auto" {
		return errors.New("--cache auto needs a device profile; live takes a size (256MiB) or a percentage (25%)")
	}
	if o.Cache, err = sim.ResolveCache(cache, m, nil, 0); err != nil {
		return err
	}
	if f.noPrefetch {
		o.Depth, o.Prefetch = 0, false
	}
	o.KeepSeries = series != ""
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	res, samples, err := live.Run(ctx, o)
	if err != nil {
		return err
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
		return enc.Encode(liveOutput{
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

// promptOrDefault is the prompt the run prefills.
func promptOrDefault(p string) string {
	if p == "" {
		return live.DefaultPrompt
	}
	return p
}
