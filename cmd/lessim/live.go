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

func newLiveCmd() *cobra.Command {
	o := live.DefaultOptions()
	var cache, format, series string
	var noPrefetch bool
	cmd := &cobra.Command{
		Use:   "live",
		Short: "Run a policy against the real llama.cpp engine and measure it",
		Long: `live decodes with llama.cpp on a GGUF Mixture-of-Experts model while the same policy
value and cache books as simulate decide which experts are in RAM: at each layer's
router the policy prefetches (pread on I/O lanes), at its top-k the misses load before
the expert matmuls run, and victims are evicted from the page cache. It prints the
same result as simulate, measured on this machine. --stock runs plain llama.cpp mmap
(page faults, no prefetch) with expert pages capped at the cache by LRU eviction.`,
		Example: `  lessim live --model tiny.gguf --policy les --cache 25% --tokens 64
  lessim live --model tiny.gguf --policy ondemand --cache 25% --stock
  lessim live --model tiny.gguf --format json --series tokens.parquet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("unknown format %q (valid: json, text)", format)
			}
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
			if noPrefetch {
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
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "", "GGUF Mixture-of-Experts model (required)")
	f.StringVar(&o.Policy, "policy", o.Policy, "cache policy (lessim policies)")
	f.StringVar(&cache, "cache", "25%", "expert cache: a size (256MiB) or a percentage of all expert bytes")
	f.IntVar(&o.Tokens, "tokens", o.Tokens, "decode tokens to generate and measure")
	f.StringVar(&o.Prompt, "prompt", "", "text to prefill before decoding (default: a fixed sentence)")
	f.IntVar(&o.Lanes, "lanes", o.Lanes, "I/O lanes issuing pread loads")
	f.IntVar(&o.Threads, "threads", o.Threads, "llama.cpp compute threads")
	f.IntVar(&o.Depth, "depth", 1, "les: layers of lookahead")
	f.BoolVar(&noPrefetch, "no-prefetch", false, "les: turn prefetch off (behaves as ondemand)")
	f.BoolVar(&o.Stock, "stock", false, "stock baseline: plain mmap page faults, no pread, no prefetch (policy ondemand)")
	f.StringVar(&format, "format", "text", "output: text or json")
	f.StringVar(&series, "series", "", "write one Parquet row per decode token to this file")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}

// promptOrDefault is the prompt the run prefills.
func promptOrDefault(p string) string {
	if p == "" {
		return live.DefaultPrompt
	}
	return p
}
