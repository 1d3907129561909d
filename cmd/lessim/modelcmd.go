package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/internal/progress"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/sim"
)

func newModelCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "model", Short: "Make and inspect GGUF model files"}
	cmd.AddCommand(newModelSynthCmd(), newModelInspectCmd())
	return cmd
}

func newModelSynthCmd() *cobra.Command {
	o := gguf.DefaultSynthOptions()
	var out, preset string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "synth",
		Short: "Write a synthetic MoE GGUF that llama.cpp loads and decodes",
		Long: `synth writes a deterministic synthetic Mixture-of-Experts model (qwen3moe) with a
byte-level tokenizer. Its routers are correlated across layers by --router-correlation,
so next-layer lookahead has signal as in trained models.`,
		Example: "  lessim model synth --arch qwen3moe --layers 16 --experts 64 --top-k 8 --hidden 1024 --expert-ffn 512 --quant q8_0 --router-correlation 0.7 --seed 1 --out tiny.gguf",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			if err := o.ApplyPreset(preset, cmd.Flags().Changed); err != nil {
				return err
			}
			o.Quantize = ggmlQuantize
			// NB: every flag starts at its default, so a 0 here was typed: validate
			// before the library's EnsureDefaults would turn it back into the default.
			if err := o.Validate(); err != nil {
				return err
			}
			w, err := gguf.NewSynthWriter(o)
			if err != nil {
				return err
			}
			fix := "make it smaller (--layers, --experts, --expert-ffn, --hidden, --vocab)"
			if strings.EqualFold(o.Quant, "f16") {
				fix += ", use --quant q8_0"
			}
			need := func() (int64, string, error) {
				n, err := w.Size()
				return n, "the model needs " + sim.FormatBytes(n), err
			}
			if err := checkSpace(out, need, fix+" or write to another folder"); err != nil {
				return err
			}
			bar := progress.New(cmd.ErrOrStderr(), w.DataSize(), "writing "+out, progress.Options{Quiet: quiet, Unit: "bytes"})
			w.SetProgress(func(n int64) { bar.Set(n) })
			// The file is written atomically: on any error, what was at --out stays.
			err = w.WriteFile(out)
			bar.Finish()
			if err != nil {
				return err
			}
			st, err := os.Stat(out)
			if err != nil {
				return err
			}
			q := o.Quant
			if o.ExpertQuant != "" && !strings.EqualFold(o.ExpertQuant, o.Quant) {
				q += ", experts " + o.ExpertQuant
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s, %d layers × %d experts (top-%d), hidden %d, %s, %s\n",
				out, o.Arch, o.Layers, o.Experts, o.TopK, o.Hidden, q, sim.FormatBytes(st.Size()))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Arch, "arch", o.Arch, "llama.cpp architecture: qwen3moe or olmoe (olmoe needs heads × head-dim = hidden, heads-kv = heads)")
	intVar(fl, &o.Layers, "layers", o.Layers, "transformer blocks (all MoE)")
	intVar(fl, &o.Experts, "experts", o.Experts, "routed experts per layer")
	intVar(fl, &o.TopK, "top-k", o.TopK, "experts used per token")
	intVar(fl, &o.Hidden, "hidden", o.Hidden, "embedding length")
	intVar(fl, &o.ExpertFFN, "expert-ffn", o.ExpertFFN, "expert feed-forward length")
	intVar(fl, &o.Heads, "heads", o.Heads, "attention heads")
	intVar(fl, &o.HeadsKV, "heads-kv", o.HeadsKV, "key/value heads")
	intVar(fl, &o.HeadDim, "head-dim", o.HeadDim, "key/value length per head")
	intVar(fl, &o.Context, "context", o.Context, "training context length")
	intVar(fl, &o.Vocab, "vocab", o.Vocab, "vocabulary size")
	fl.StringVar(&o.Quant, "quant", o.Quant, "weight type of every matrix: f16 or q8_0, and with llama.cpp (make build) q4_k, q3_k or mxfp4")
	fl.StringVar(&o.ExpertQuant, "expert-quant", "", "weight type of the routed experts (default: --quant): one of --quant's")
	floatVar(fl, &o.RouterCorrelation, "router-correlation", o.RouterCorrelation, "0..1: how much adjacent layers' routing agrees (lookahead signal)")
	floatVar(fl, &o.AttentionScale, "attention-scale", o.AttentionScale, "multiplier of the attention sublayer's output (raises next-token expert reuse with sharing)")
	floatVar(fl, &o.AttentionSharing, "attention-sharing", o.AttentionSharing, "0..1: how much adjacent layers' attention matrices agree")
	fl.StringVar(&preset, "preset", "default", "routing statistics: default, or trained-like (router correlation 0.9, attention scale 2, sharing 0.97: lookahead recall ≈ 0.87, reuse ≈ 0.42 on the default shape)")
	uint64Var(fl, &o.Seed, "seed", o.Seed, "seed of every weight")
	fl.StringVar(&out, "out", "", "output GGUF file")
	fl.BoolVar(&quiet, "quiet", false, "no progress report on stderr")
	return cmd
}

func newModelInspectCmd() *cobra.Command {
	var format string
	var maxExperts int
	cmd := &cobra.Command{
		Use:   "inspect MODEL.gguf",
		Short: "Show a GGUF's header, tensors, quant types and every expert's byte ranges",
		Args:  oneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if maxExperts < 0 {
				return fmt.Errorf("--max-experts %d: must be >= 0 (0 = all)", maxExperts)
			}
			f, err := gguf.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if format == "json" {
				return f.WriteInspectJSON(cmd.OutOrStdout(), maxExperts)
			}
			return f.WriteInspect(cmd.OutOrStdout(), maxExperts)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	intVar(cmd.Flags(), &maxExperts, "max-experts", 0, "experts listed per layer (0 = all)")
	return cmd
}
