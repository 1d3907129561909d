package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/internal/progress"
	"github.com/lessim/lessim/traces"
)

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trace", Short: "Make, import and measure router traces"}
	cmd.AddCommand(newTraceSynthCmd(), newTraceStatsCmd(), newTraceImportCmd())
	return cmd
}

func newTraceSynthCmd() *cobra.Command {
	o := traces.DefaultSynthOptions()
	var model, variant, out string
	var quiet bool
	var lookTop int
	cmd := &cobra.Command{
		Use:   "synth",
		Short: "Write a synthetic trace of any model shape",
		Long: `synth writes a deterministic synthetic router trace: expert popularity skew that
grows with depth, next-token reuse and next-layer lookahead scores of a chosen recall.
Defaults follow public measurements (reuse 0.45, stale-gate recall 0.807).`,
		Example: "  lessim trace synth --model minicpm-v-4.7-35b-a3b --tokens 2000 --seed 7 --out synth.parquet",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			if o.LookaheadDepth == 0 {
				if err := refuseFlags(cmd, []string{"lookahead-recall", "lookahead-top"}, "with --depth 0: the trace has no lookahead scores"); err != nil {
					return err
				}
			}
			m, err := devices.LookupModel(model, variant)
			if err != nil {
				return err
			}
			if lookTop < 0 || lookTop > m.Experts {
				return fmt.Errorf("--lookahead-top %d: must be in [0, %d], the model's experts per layer (0 = full score vectors)", lookTop, m.Experts)
			}
			meta, src, err := traces.SynthSource(m, o)
			if err != nil {
				return err
			}
			setInfo(&meta, "lessim_version", version)
			meta.LookaheadTop = lookTop
			total := int64(o.Sequences) * int64(o.Tokens+o.PromptTokens)
			src, err = checkTraceSpace(out, meta, total, src, synthSpaceFix(o, lookTop))
			if err != nil {
				return err
			}
			n, err := writeTrace(out, meta, src, progress.New(cmd.ErrOrStderr(), total, "synth", progress.Options{Quiet: quiet, Unit: "tok"}))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s × %s (%s, seed %d)\n", out, plural.Count(int(n), "token"), plural.Count(len(m.Layers), "layer"), m.Name, o.Seed)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&model, "model", experiment.DefaultModel, "built-in model spec")
	fl.StringVar(&variant, "variant", "", "quant variant")
	fl.StringVar(&out, "out", "", "output Parquet file")
	uint64Var(fl, &o.Seed, "seed", o.Seed, "generator seed")
	intVar(fl, &o.Tokens, "tokens", o.Tokens, "decode tokens per sequence")
	intVar(fl, &o.PromptTokens, "prompt-tokens", o.PromptTokens, "prefill tokens per sequence")
	intVar(fl, &o.Sequences, "sequences", o.Sequences, "sequences")
	floatVar(fl, &o.Skew, "skew", o.Skew, fmt.Sprintf("Zipf exponent of expert popularity at the deepest layer, in [0, %d]", traces.MaxSkew))
	floatVar(fl, &o.Reuse, "reuse", o.Reuse, "probability a previous-token expert is selected again, in [0, 1]")
	floatVar(fl, &o.LookaheadRecall, "lookahead-recall", o.LookaheadRecall, "mean top-k recall of the depth-1 lookahead scores, in [0, 1]")
	intVar(fl, &o.LookaheadDepth, "depth", o.LookaheadDepth, "lookahead depth (layers of scores per row)")
	fl.BoolVar(&o.Logits, "logits", o.Logits, "also write full router logits")
	intVar(fl, &lookTop, "lookahead-top", 0, "store each row's N best lookahead candidates, their scores and softmax sum instead of full score vectors (0 = full vectors)")
	fl.BoolVar(&quiet, "quiet", false, "no progress report on stderr")
	return cmd
}

// synthSpaceFix names the flags that would make a synthetic trace smaller.
func synthSpaceFix(o traces.SynthOptions, lookTop int) string {
	ways := []string{"fewer tokens or sequences (--tokens, --prompt-tokens, --sequences)"}
	if o.LookaheadDepth > 0 && lookTop == 0 {
		ways = append(ways, "the lookahead compactly (--lookahead-top 8)")
	}
	if o.Logits {
		ways = append(ways, "no router logits (without --logits)")
	}
	ways = append(ways, "to another folder")
	return "write " + strings.Join(ways[:len(ways)-1], ", ") + " or " + ways[len(ways)-1]
}

// writeTrace writes src to path atomically (traces.Create), reporting each
// step to bar, and returns the step count.
func writeTrace(path string, meta traces.Meta, src traces.Source, bar *progress.Bar) (int, error) {
	w, err := traces.Create(path, meta)
	if err != nil {
		return 0, err
	}
	defer bar.Finish()
	n := 0
	for ; src.Next(); n++ {
		if err := w.Write(src.Step()); err != nil {
			w.Abort()
			return 0, err
		}
		bar.Add(1)
	}
	if err := src.Err(); err != nil {
		w.Abort()
		return 0, err
	}
	return n, w.Close()
}

func newTraceStatsCmd() *cobra.Command {
	var format string
	var opt traces.StatsOptions
	cmd := &cobra.Command{
		Use:   "stats TRACE.parquet",
		Short: "Measure a trace: popularity, reuse, lookahead recall, hit rate",
		Args:  oneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			r, err := traces.Open(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			st, err := traces.ComputeStats(r.Meta(), r, opt)
			if err != nil {
				return err
			}
			return writeStats(cmd.OutOrStdout(), st, format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	intVar(cmd.Flags(), &opt.HotList, "hot-list", 0, "size of the static hot list per layer (0 = top-k)")
	return cmd
}

func writeStats(w io.Writer, st *traces.Stats, format string) error {
	if format != "json" {
		return st.WriteText(w)
	}
	b, err := st.MarshalJSONIndent()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// importFormats are the foreign trace formats trace import reads.
var importFormats = []string{"bmoe-route-csv"}

func newTraceImportCmd() *cobra.Command {
	var format, out, model, variant string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Convert another engine's route trace to a lessim trace",
		Long: `import converts a foreign router trace. bmoe-route-csv is the route trace of the
BigMoeOnEdge engine (github.com/Helldez/BigMoeOnEdge, Apache-2.0), including its
recorded cache residency, so replays can be checked against the recording. The
input may be gzip-compressed (detected from its first bytes) and may start with a
UTF-8 byte-order mark; a last line cut off without a newline is reported as a
truncated file. --out must not name the input.

A route trace records only each layer's expert and dense bytes. --model names the
built-in model the trace ran (see: lessim models list) to adopt its full spec
(tensors and their quant types, hidden and FFN sizes, FLOPs, head, KV cache) so
that runs can charge compute and re-quantize its experts (ablate's step 4); the
model must agree with the trace on architecture, layers, experts and every layer's
expert and dense bytes, and the trace's top-k is kept.`,
		Example: "  lessim trace import --format bmoe-route-csv qwen.route.csv --out qwen.parquet\n" +
			"  lessim trace import qwen.route.csv --model qwen3-30b-a3b --out qwen-spec.parquet",
		Args: oneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "bmoe-route-csv" {
				return fmt.Errorf("unknown import format %q (valid: %s)", format, strings.Join(importFormats, ", "))
			}
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			if err := checkOutput("out", out, args[0]); err != nil {
				return err
			}
			if variant != "" && model == "" {
				return fmt.Errorf("--variant applies only with --model")
			}
			meta, steps, err := traces.ImportBMoE(args[0])
			if err != nil {
				return err
			}
			if model != "" {
				m, err := devices.LookupModel(model, variant)
				if err != nil {
					return fmt.Errorf("--model: %w", err)
				}
				if err := traces.AdoptModel(&meta, m); err != nil {
					return fmt.Errorf("--model: %w", err)
				}
			}
			setInfo(&meta, "lessim_version", version)
			src, err := checkTraceSpace(out, meta, int64(len(steps)), traces.NewSliceSource(steps), "write it to another folder")
			if err != nil {
				return err
			}
			bar := progress.New(cmd.ErrOrStderr(), int64(len(steps)), "import", progress.Options{Quiet: quiet, Unit: "tok"})
			n, err := writeTrace(out, meta, src, bar)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s × %s of %s (%s)\n", out, plural.Count(int(n), "token"), plural.Count(len(meta.Model.Layers), "layer"), meta.Model.Name, meta.Model.Arch)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "bmoe-route-csv", "input format: "+strings.Join(importFormats, ", "))
	cmd.Flags().StringVar(&out, "out", "", "output Parquet file")
	cmd.Flags().StringVar(&model, "model", "", "built-in model the trace ran, whose full spec replaces the trace's (see: lessim models list)")
	cmd.Flags().StringVar(&variant, "variant", "", "quant variant of --model (default: the model's default)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress report on stderr")
	return cmd
}

func setInfo(m *traces.Meta, k, v string) {
	if m.Info == nil {
		m.Info = map[string]string{}
	}
	m.Info[k] = v
}
