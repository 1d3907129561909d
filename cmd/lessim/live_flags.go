package main

import (
	"errors"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
)

// liveFlags are live's flags, shared by the llama.cpp build (local and
// remote runs) and the build without it (remote runs only).
type liveFlags struct {
	o                     live.Options
	cache, format, series string
	noPrefetch            bool
	target, token         string
	spec                  string
}

const liveLong = `live decodes with llama.cpp on a GGUF Mixture-of-Experts model while the same policy
value and cache books as simulate decide which experts are in RAM: at each layer's
router the policy prefetches (pread on I/O lanes), at its top-k the misses load before
the expert matmuls run, and victims are evicted from the page cache. It prints the
same result as simulate, measured on this machine. --stock runs plain llama.cpp mmap
(page faults, no prefetch) with expert pages capped at the cache by LRU eviction.

With --target tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT the run goes to a
device agent (lessim agent, or an app speaking docs/agent-protocol.md) instead: the agent decodes
its own model and the output records the device facts it reported. A remote run
needs no llama.cpp in this build.`

const liveExample = `  lessim live --model tiny.gguf --policy les --cache 25% --tokens 64
  lessim live --model tiny.gguf --policy ondemand --cache 25% --stock
  lessim live --model tiny.gguf --format json --series tokens.parquet
  lessim live --target tcp://127.0.0.1:7070 --token 0123… --policy les --cache 25%`

// addLiveFlags defines live's flags on cmd.
func addLiveFlags(cmd *cobra.Command, f *liveFlags) {
	f.o = live.DefaultOptions()
	fl := cmd.Flags()
	fl.StringVar(&f.o.Model, "model", "", "GGUF Mixture-of-Experts model (required without --target)")
	fl.StringVar(&f.o.Policy, "policy", f.o.Policy, "cache policy (lessim policies)")
	fl.StringVar(&f.cache, "cache", "25%", "expert cache: a size (256MiB) or a percentage of all expert bytes")
	intVar(fl, &f.o.Tokens, "tokens", f.o.Tokens, "decode tokens to generate and measure")
	fl.StringVar(&f.o.Prompt, "prompt", "", "text to prefill before decoding (default: a fixed sentence)")
	intVar(fl, &f.o.Lanes, "lanes", f.o.Lanes, "I/O lanes issuing pread loads")
	intVar(fl, &f.o.Threads, "threads", f.o.Threads, "llama.cpp compute threads, 1.."+strconv.Itoa(record.MaxThreads))
	intVar(fl, &f.o.Depth, "depth", 1, "les: layers of lookahead")
	fl.BoolVar(&f.noPrefetch, "no-prefetch", false, "les: turn prefetch off (behaves as ondemand)")
	fl.BoolVar(&f.o.Stock, "stock", false, "stock baseline: plain mmap page faults, no pread, no prefetch (policy ondemand)")
	fl.StringVar(&f.format, "format", "text", "output: text or json")
	fl.StringVar(&f.series, "series", "", "write one Parquet row per decode token to this file")
	fl.StringVar(&f.spec, "spec", "", "run the experiment in FILE (- = stdin; a result's JSON or a bare spec, as simulate takes): its policy, cache, layout and decode tokens; --policy, --cache, --tokens, --depth, --no-prefetch and --stock may not be given with it")
	fl.StringVar(&f.target, "target", "", "run on a device agent: tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT")
	fl.StringVar(&f.token, "token", "", "the agent's token with --target (default $"+tokenEnv+")")
}

// checkLiveLocal checks what a local run's flags say before any work:
// --series must not name an input (the model, the --spec file) and must be
// writable (checkOutput: it is written after the whole run), an
// explicitly empty --prompt is refused (it would silently be the default),
// and --threads must be in range (checkThreads).
func checkLiveLocal(cmd *cobra.Command, f *liveFlags) error {
	if f.series != "" {
		spec := f.spec
		if spec == "-" {
			spec = ""
		}
		if err := checkOutput("series", f.series, f.o.Model, spec); err != nil {
			return err
		}
	}
	return errors.Join(checkThreads(f.o.Threads), refuseBlank(cmd, "prompt", "the text to prefill", "live's fixed sentence"))
}

// stockRefused are the flags the stock baseline has no use for, each with
// why: it is plain llama.cpp mmap, reading experts by page faults with no
// prefetch, whatever the policy.
var stockRefused = []struct{ name, why string }{
	{"lanes", "it reads experts by page faults, not by pread on I/O lanes"},
	{"depth", "it is plain mmap with no prefetch, so there is no lookahead depth to set"},
	{"no-prefetch", "it is plain mmap, which never prefetches"},
}

// checkStockFlags refuses the flags of stockRefused when the run is stock.
// live calls it first with --stock, before any other check of those flags
// (les's --depth checks would otherwise blame the policy), and again once a
// --spec has said whether the run is stock.
func checkStockFlags(cmd *cobra.Command, stock bool) error {
	if !stock {
		return nil
	}
	for _, r := range stockRefused {
		if err := refuseFlags(cmd, []string{r.name}, "to the stock baseline: "+r.why); err != nil {
			return err
		}
	}
	return nil
}

// newLiveCmd runs live's flags here (runLiveLocal, llama.cpp builds) or on
// a device agent (--target, every build).
func newLiveCmd() *cobra.Command {
	var f liveFlags
	cmd := &cobra.Command{
		Use:     "live",
		Short:   "Run a policy against the real llama.cpp engine (here or on a device agent) and measure it",
		Long:    liveLong,
		Example: liveExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(f.format); err != nil {
				return err
			}
			if f.o.Stock && !cmd.Flags().Changed("policy") {
				f.o.Policy = "ondemand" // the stock baseline's only policy, not les, the default
			}
			if err := checkStockFlags(cmd, f.o.Stock); err != nil {
				return err
			}
			if f.target != "" {
				return runLiveRemote(cmd, &f)
			}
			if f.token != "" {
				return errors.New("--token applies only with --target")
			}
			if f.o.Model == "" {
				return errors.New(`required flag(s) "model" not set (or run on an agent with --target)`)
			}
			if err := checkLiveLocal(cmd, &f); err != nil {
				return err
			}
			return runLiveLocal(cmd, &f)
		},
	}
	addLiveFlags(cmd, &f)
	return cmd
}
