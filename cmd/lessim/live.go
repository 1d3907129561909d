package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/validation"
)

// liveOutput is live's JSON: the agent and its device facts (--target),
// the one spec that reruns it (live --spec) and the measured Result.
type liveOutput struct {
	Target string             `json:"target,omitempty"`
	Device *agent.DeviceFacts `json:"device,omitempty"`
	Spec   experiment.Spec    `json:"spec"`
	Result *sim.Result        `json:"result"`
}

type liveFlags struct {
	targetFlags
	model, policy, cache, prompt, format, series, spec string
	tokens, lanes, threads, depth                      int
	noPrefetch, stock                                  bool
	sp                                                 record.Speculative
}

// liveLocalOnly are flags of the host group (and the series file): an
// agent decides them.
var liveLocalOnly = []string{"model", "prompt", "lanes", "threads", "series", "draft-model"}

// liveSpecFlags are the flags a --spec file replaces.
var liveSpecFlags = []string{"policy", "cache", "tokens", "depth", "no-prefetch", "stock", "spec-block", "drafter", "spec-accept", "accept-seed"}

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

func newLiveCmd() *cobra.Command {
	var f liveFlags
	cmd := &cobra.Command{
		Use:     "live",
		Short:   "Run a policy against the real llama.cpp engine (here or on a device agent) and measure it",
		Long:    liveLong,
		Example: liveExample,
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runLive(cmd, &f) },
	}
	o := live.DefaultOptions()
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "GGUF Mixture-of-Experts model (required without --target)")
	fl.StringVar(&f.policy, "policy", o.Policy, "cache policy (lessim policies)")
	fl.StringVar(&f.cache, "cache", "25%", "expert cache: a size (256MiB) or a percentage of all expert bytes")
	intVar(fl, &f.tokens, "tokens", o.Tokens, "decode tokens to generate and measure")
	fl.StringVar(&f.prompt, "prompt", "", "text to prefill before decoding (default: a fixed sentence)")
	intVar(fl, &f.lanes, "lanes", o.Lanes, "I/O lanes issuing pread loads")
	intVar(fl, &f.threads, "threads", o.Threads, "llama.cpp compute threads, 1.."+strconv.Itoa(record.MaxThreads))
	intVar(fl, &f.depth, "depth", 1, "les: layers of lookahead")
	fl.BoolVar(&f.noPrefetch, "no-prefetch", false, "les: turn prefetch off (behaves as ondemand)")
	fl.BoolVar(&f.stock, "stock", false, "stock baseline: plain mmap page faults, no pread, no prefetch (policy ondemand)")
	specFlags(fl, &f.sp, "speculative decoding: tokens per greedy verify pass, >= 2 (with --drafter)", "controlled drafter: seed of its draws")
	fl.StringVar(&f.format, "format", "text", "output: text or json")
	fl.StringVar(&f.series, "series", "", "write one Parquet row per decode token to this file")
	fl.StringVar(&f.spec, "spec", "", "run the experiment in FILE (- = stdin; a result's JSON or a bare spec, as simulate takes; live's own JSON reruns its run): its policy, cache, layout, decode tokens and host group; --policy, --cache, --tokens, --depth, --no-prefetch and --stock may not be given with it")
	f.add(fl, "run on a device agent: "+targetForms)
	return cmd
}

// runLive runs live's spec (--spec or the flags) on the engine here or at --target.
func runLive(cmd *cobra.Command, f *liveFlags) error {
	if err := checkFormat(f.format); err != nil {
		return err
	}
	if f.stock && !cmd.Flags().Changed("policy") {
		f.policy = "ondemand" // the stock baseline's only policy, not les, the default
	}
	if err := checkStockFlags(cmd, f.stock); err != nil {
		return err
	}
	token, err := checkLiveTarget(cmd, f)
	if err != nil {
		return err
	}
	s, notes, err := liveSpec(cmd, f)
	if err != nil {
		return err
	}
	ctx, stop := atomicfile.NotifyContext(cmd.Context())
	defer stop()
	eng, err := openLiveEngine(ctx, f, s.Host, token)
	if err != nil {
		return err
	}
	defer closeEngine(eng)
	if s.Host != nil {
		if err := agent.Supports(eng, agent.CapHost); err != nil {
			return fmt.Errorf("host group %s: %w", remoteWhy, err)
		}
	}
	if err := checkStockFlags(cmd, s.Layout == string(sim.LayoutGGUFMmap)); err != nil {
		return err
	}
	raw, err := json.Marshal(s) // NB: with its host group: the local engine runs it (an agent has none)
	if err != nil {
		return err
	}
	var samples []agent.TokenSample
	res, err := eng.Run(ctx, raw, func(t agent.TokenSample) error { samples = append(samples, t); return nil })
	if err != nil {
		return err
	}
	res.Warnings = append(res.Warnings, notes...)
	if f.series != "" {
		series, err := validation.LiveSeries(samples)
		if err != nil {
			return err
		}
		if err := live.WriteSeries(f.series, series); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", f.series)
	}
	return printLive(cmd, f, eng, s, res)
}

// checkLiveTarget checks where the run goes, then the flags an agent
// decides (liveLocalOnly) or, here, checkLiveLocal. It returns the token.
func checkLiveTarget(cmd *cobra.Command, f *liveFlags) (string, error) {
	token, err := f.check()
	switch {
	case err != nil:
		return "", err
	case f.target == "":
		return "", checkLiveLocal(cmd, f)
	}
	return token, refuseFlags(cmd, liveLocalOnly, remoteWhy)
}

// openLiveEngine opens a client of --target, or the live engine on the
// host group's model.
func openLiveEngine(ctx context.Context, f *liveFlags, h *experiment.Host, token string) (agent.Engine, error) {
	var model string
	if f.target == "" {
		if model = h.ModelFile; model == "" {
			return nil, errors.New(`required flag(s) "model" not set (or run on an agent with --target)`)
		}
		if f.series != "" && f.model == "" { // the --spec file's model
			if err := checkOutput("series", f.series, model); err != nil {
				return nil, err
			}
		}
	}
	return f.open(ctx, token, model, liveOptions{}, "run live here", "or run on a device agent with --target")
}

// checkLiveLocal checks a local run's flags before any work: --series
// (checkOutput: it is written after the whole run), --prompt and --threads.
func checkLiveLocal(cmd *cobra.Command, f *liveFlags) error {
	if f.series != "" {
		spec := f.spec
		if spec == "-" {
			spec = ""
		}
		if err := checkOutput("series", f.series, f.model, spec); err != nil {
			return err
		}
	}
	return errors.Join(checkThreads(f.threads), refuseBlank(cmd, "prompt", "the text to prefill", "live's fixed sentence"))
}

// liveSpec is the run's one spec: --spec FILE or live's flags, with the
// host group on this machine (the flags' over the file's). notes are what
// the result should say about it.
func liveSpec(cmd *cobra.Command, f *liveFlags) (experiment.Spec, []string, error) {
	var s experiment.Spec
	var notes []string
	if f.spec == "" {
		var err error
		if s, err = liveFlagSpec(cmd, f); err != nil {
			return s, nil, err
		}
	} else {
		if err := refuseFlags(cmd, liveSpecFlags, "with --spec: the spec holds the run (edit it instead)"); err != nil {
			return s, nil, err
		}
		var named func(string) bool
		var err error
		if s, named, err = experiment.ReadSpec(f.spec, cmd.InOrStdin(), true); err != nil {
			return s, nil, err
		}
		if f.target == "" && named("device") && s.Device.Profile == nil {
			notes = append(notes, "device "+s.Device.Name+s.Device.File+": the live run measures this machine, which the spec's device is taken to describe")
		}
		if !named("device") || f.target == "" {
			s.Device = experiment.Device{} // the engine's
		}
		if !named("model") {
			s.Model = nil // the engine's
		}
	}
	if f.target == "" {
		h := experiment.Host{}
		if s.Host != nil {
			h = *s.Host
		}
		changed := cmd.Flags().Changed
		if f.model != "" {
			h.ModelFile = f.model
		}
		if changed("prompt") || h.Prompt == "" {
			h.Prompt = f.prompt
		}
		if changed("lanes") || h.Lanes == 0 {
			h.Lanes = f.lanes
		}
		if changed("threads") || h.Threads == 0 {
			h.Threads = f.threads
		}
		if changed("draft-model") {
			h.DraftModel = f.sp.DraftModel
		}
		s.Host = &h
	}
	return s, notes, nil
}

// liveFlagSpec is the spec of live's flags: the engine's own device and
// model, a synthetic trace of --tokens, and on this machine the live
// engine's compute order (barrier), so that simulate on it predicts it.
func liveFlagSpec(cmd *cobra.Command, f *liveFlags) (experiment.Spec, error) {
	syn := experiment.DefaultSynthetic()
	syn.Tokens = f.tokens
	s := experiment.Spec{
		Version: experiment.Version, Trace: experiment.Trace{Synthetic: &syn},
		Policy: experiment.Policy{Name: f.policy}, Cache: experiment.Cache{Size: f.cache},
		Layout: string(sim.LayoutPerExpert), CachedFirst: true,
	}
	if f.stock {
		s.Layout = string(sim.LayoutGGUFMmap)
	}
	if f.target == "" {
		s.CachedFirst, s.Barrier = false, !f.stock
	}
	changed := cmd.Flags().Changed
	if sp := f.sp; slices.ContainsFunc(specFlagNames[:4], changed) {
		s.Speculative = &experiment.Speculative{Block: sp.Block, Accept: sp.Accept, AcceptSeed: sp.Seed, Drafter: &experiment.Drafter{Kind: sp.Drafter}}
		if sp.Drafter == experiment.DrafterModel {
			if sp.DraftModel == "" {
				return experiment.Spec{}, errors.New("--drafter model: give the draft model with --draft-model FILE (a run on this machine)")
			}
			d := s.Speculative.Drafter
			var err error
			if d.Bytes, d.FLOPs, err = record.DraftCost(sp.DraftModel); err != nil {
				return experiment.Spec{}, err
			}
		}
	}
	if changed("depth") || f.noPrefetch {
		if err := checkLiveDepth(changed("depth"), f); err != nil {
			return experiment.Spec{}, err
		}
		s.Policy.LES = &experiment.LES{Depth: f.depth, NoPrefetch: f.noPrefetch}
		if f.noPrefetch {
			s.Policy.LES.Depth = 0
		}
		// As simulate: a simulator agent's synthetic trace carries the
		// lookahead les asks for (a live engine's model routes).
		syn.LookaheadDepth = max(syn.LookaheadDepth, s.Policy.LES.Depth)
	}
	return s, nil
}

// checkLiveDepth checks les's --depth and --no-prefetch as simulate does.
func checkLiveDepth(depthSet bool, f *liveFlags) error {
	if err := policies.CheckName(f.policy); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	switch {
	case f.policy != "les":
		return fmt.Errorf("--depth and --no-prefetch are settings of les, not of %s", f.policy)
	case depthSet && f.noPrefetch:
		return errors.New("--depth does not apply: --no-prefetch is set, so les prefetches nothing")
	case depthSet:
		if err := policies.CheckDepth(f.depth); err != nil {
			return fmt.Errorf("--depth %d: %w", f.depth, err)
		}
	}
	return nil
}

// stockRefused are the flags the stock baseline (plain llama.cpp mmap) has
// no use for, each with why.
var stockRefused = []struct{ name, why string }{
	{"lanes", "it reads experts by page faults, not by pread on I/O lanes"},
	{"depth", "it is plain mmap with no prefetch, so there is no lookahead depth to set"},
	{"no-prefetch", "it is plain mmap, which never prefetches"},
}

// checkStockFlags refuses stockRefused when the run is stock: first with
// --stock (before les's --depth checks blame the policy), again once a
// --spec has said.
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

func printLive(cmd *cobra.Command, f *liveFlags, eng agent.Engine, s experiment.Spec, res *sim.Result) error {
	facts := eng.Facts()
	o := liveOutput{Spec: s, Result: res}
	if f.target != "" {
		o.Target, o.Device, o.Spec.Device = f.target, &facts, experiment.Device{Name: facts.Model}
	}
	if f.format == "json" {
		return printJSON(cmd.OutOrStdout(), o)
	}
	var info agent.ModelInfo
	if h := s.Host; h != nil {
		var err error
		if info, err = eng.LoadModel(cmd.Context(), filepath.Base(h.ModelFile)); err != nil {
			return err
		}
	}
	return reports.WriteLive(cmd.OutOrStdout(), f.target, facts, &info, s, res)
}
