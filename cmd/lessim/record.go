//go:build llamacpp

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lessim/lessim/internal/numtext"
	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/internal/progress"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/llama"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// ggmlQuantize is ggml's quantizer, for model synth's K-quants and MXFP4.
var ggmlQuantize gguf.Quantizer = llama.Quantize

func newRecordCmd() *cobra.Command {
	o := record.DefaultOptions()
	var promptsFile, prompt string
	var quiet bool
	var sp record.Speculative
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record router traces from the real llama.cpp engine",
		Long: `record decodes prompts with llama.cpp on a GGUF Mixture-of-Experts model and writes,
per token and MoE layer, the selected experts, normalized gate weights, router logits
and lookahead scores (router of layer l+d applied to layer l's router input). Without
--prompts or --prompt it uses a built-in varied prompt set (prose, code, lists,
numbers). Prompt files hold prompts separated by blank lines; # starts a comment.`,
		Example: `  lessim record --model tiny.gguf --prompts prompts.txt --tokens 128 --out tiny.parquet
  lessim record --model any-moe.gguf --prompt "Describe this receipt" --tokens 64 --lookahead-depth 2 --router-inputs --out t.parquet`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := errors.Join(refuseBlank(cmd, "prompt", "the text to prefill", "the built-in prompt set"),
				refuseBlank(cmd, "prompts", "a prompts file", "the built-in prompt set"), refuseEmpty(cmd, "model", "out"),
				checkThreads(o.Threads), refuseGreedy(cmd, o.Temperature)); err != nil {
				return err
			}
			switch {
			case promptsFile != "" && prompt != "":
				return errors.New("give --prompts or --prompt, not both")
			case promptsFile != "":
				ps, err := record.ReadPrompts(promptsFile)
				if err != nil {
					return err
				}
				o.Prompts, o.PromptSet = ps.Prompts, ps.Name
			case prompt != "":
				o.Prompts, o.PromptSet = []string{prompt}, "inline"
			}
			if slices.ContainsFunc(specFlagNames, cmd.Flags().Changed) {
				o.Spec = &sp
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if err := checkOutput("out", o.Out, o.ModelPath, promptsFile, sp.DraftModel); err != nil {
				return err
			}
			mc, err := record.CheckModel(o.ModelPath)
			if err != nil {
				return err
			}
			err = record.CheckLookahead(o.LookaheadDepth, len(mc.MoE.Layers))
			if err == nil {
				err = checkRecordSpace(&o, mc) // before llama.cpp loads the model
			}
			mc.File.Close()
			if err != nil {
				return err
			}
			// A Ctrl-C ends the process through main's atomicfile handler, which
			// removes the half-written trace; what was at --out stays.
			o.CheckSpace = func(ts record.TraceSize) error { return recordSpace(&o, ts) }
			o.Progress = progressFunc(cmd.ErrOrStderr(), quiet)
			sum, err := record.Record(cmd.Context(), o)
			o.Progress(-1, 0)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s, %d prefill + %d decode tokens × %s (%s)\n",
				sum.Out, plural.Count(sum.Prompts, "prompt"), sum.PrefillTokens, sum.DecodeTokens, plural.Count(sum.MoELayers, "MoE layer"), plural.Count(int(sum.Rows), "row"))
			fmt.Fprintf(cmd.OutOrStdout(), "engine: %.2f tok/s decode with capture, %d thread(s); model %s\n",
				sum.DecodeTokensPerSec(), o.Threads, sim.FormatBytes(fileSize(o.ModelPath)))
			if o.Spec != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "speculative: %d verify passes, %d drafts rejected, drafter %.3f ms in all\n", sum.DecodePasses, sum.RejectedDrafts, float64(sum.DraftNS)/1e6)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.ModelPath, "model", "", "GGUF Mixture-of-Experts model")
	fl.StringVar(&promptsFile, "prompts", "", "prompt file (prompts separated by blank lines)")
	fl.StringVar(&prompt, "prompt", "", "a single prompt")
	intVar(fl, &o.Tokens, "tokens", o.Tokens, "decode tokens per prompt")
	intVar(fl, &o.LookaheadDepth, "lookahead-depth", o.LookaheadDepth, "next layers' router scores per row (0 = none)")
	fl.BoolVar(&o.RouterInputs, "router-inputs", o.RouterInputs, "also store each layer's router input vector")
	fl.BoolVar(&o.Logits, "logits", o.Logits, "store router logits")
	uint64Var(fl, &o.Seed, "seed", o.Seed, "sampler seed (prompt i uses seed+i)")
	float32Var(fl, &o.Temperature, "temperature", o.Temperature, "sampling temperature (0 = greedy)")
	intVar(fl, &o.TopK, "sample-top-k", o.TopK, "sampler top-k (0 = off)")
	intVar(fl, &o.Threads, "threads", o.Threads, "compute threads, 1.."+strconv.Itoa(record.MaxThreads)+" (1 recommended on shared machines)")
	specFlags(fl, &sp, "speculative decoding (with --temperature 0): tokens per greedy verify pass, >= 2; every pass is recorded, its rejected drafts as rows of phase 2",
		"controlled drafter: seed of its draws (prompt i uses seed+i)")
	fl.StringVar(&o.Out, "out", "", "output trace (Parquet)")
	fl.BoolVar(&o.Verbose, "verbose", false, "show llama.cpp's log")
	fl.BoolVar(&quiet, "quiet", false, "no progress report on stderr")
	cmd.MarkFlagRequired("model")
	cmd.MarkFlagRequired("out")
	return cmd
}

// float32Var defines a float32 flag that must be finite.
func float32Var(fl *pflag.FlagSet, p *float32, name string, value float32, usage string) {
	numVar(fl, p, name, value, usage, "float32", func(s string) (float32, error) {
		v, err := numtext.Float(s, 32)
		return float32(v), err
	})
}

// refuseGreedy refuses the sampler's settings at temperature 0.
func refuseGreedy(cmd *cobra.Command, temperature float32) error {
	if temperature != 0 {
		return nil
	}
	return refuseFlags(cmd, []string{"sample-top-k", "seed"}, "at --temperature 0: decoding is greedy (the most likely token, no sampling)")
}

// progressFunc is record.Options.Progress on a bar on w; done < 0 finishes it.
func progressFunc(w io.Writer, quiet bool) func(done, total int) {
	set, finish := progress.Lazy(w, "recording", progress.Options{Quiet: quiet, Unit: "tok"})
	return func(done, total int) {
		if done < 0 {
			finish()
			return
		}
		set(int64(done), int64(total))
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// checkRecordSpace refuses, before the model is loaded, a recording whose
// trace cannot fit at o.Out (with a lower bound of the prompt tokens).
func checkRecordSpace(o *record.Options, mc *record.ModelCheck) error {
	return recordSpace(o, record.EstimateTraceSize(o, mc))
}

// recordSpace refuses a recording whose trace of size inputs ts cannot fit
// at o.Out: before the model loads, and once the prompts are tokenized.
func recordSpace(o *record.Options, ts record.TraceSize) error {
	least := "at least "
	if ts.PromptExact {
		least = ""
	}
	count := fmt.Sprintf("%d tokens: %d decode and %s%d prompt", ts.Steps(), ts.DecodeSteps, least, ts.MinPromptSteps)
	_, err := traceSpace(o.Out, ts.Meta, ts.Steps(), count, ts.Sample(), recordSpaceFix(o))
	return err
}

// recordSpaceFix names the flags that would make the trace smaller.
func recordSpaceFix(o *record.Options) string {
	ways := []string{"fewer or shorter prompts (--prompts, --prompt) or decode tokens (--tokens)"}
	if o.RouterInputs {
		ways = append(ways, "no router inputs (without --router-inputs)")
	}
	if o.Logits {
		ways = append(ways, "no router logits (--logits=false)")
	}
	if o.LookaheadDepth > 0 {
		ways = append(ways, "a smaller --lookahead-depth")
	}
	ways = append(ways, "to another folder")
	return "record " + strings.Join(ways[:len(ways)-1], ", ") + " or write " + ways[len(ways)-1]
}
