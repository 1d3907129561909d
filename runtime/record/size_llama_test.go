//go:build llamacpp

package record

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/traces"
)

// TestTraceSizeMatchesRecord: the size traces.EstimateSize gives from
// EstimateTraceSize's meta and sample steps, taken at the recording's real
// step count, is no more than 5% below and 15% above the trace Record
// writes, for each storage mode (logits, lookahead depth, router inputs),
// and the pre-tokenizing step count is at most the real one. NB: it errs
// high (2-11% here): the sample's random routing compresses worse than a
// model's, which repeats experts from token to token.
func TestTraceSizeMatchesRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
	}{
		{"default", nil},
		{"no logits, no lookahead", func(o *Options) { o.Logits, o.LookaheadDepth = false, 0 }},
		{"depth 3, router inputs", func(o *Options) { o.LookaheadDepth, o.RouterInputs = 3, true }},
		{"builtin prompts", func(o *Options) { o.Prompts, o.Tokens = nil, 32 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.ModelPath, o.Prompts, o.Tokens = synthModel(t, 0.7), testPrompts, 48
			o.Out = filepath.Join(t.TempDir(), "trace.parquet")
			if tc.edit != nil {
				tc.edit(&o)
			}
			sum, err := Record(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(o.Out)
			if err != nil {
				t.Fatal(err)
			}
			mc, err := CheckModel(o.ModelPath)
			if err != nil {
				t.Fatal(err)
			}
			defer mc.File.Close()
			ts := EstimateTraceSize(&o, mc)
			if ts.DecodeSteps != int64(sum.DecodeTokens) || ts.Steps() > int64(sum.PrefillTokens+sum.DecodeTokens) {
				t.Errorf("steps: estimate %d decode + at least %d prompt, recorded %d + %d", ts.DecodeSteps, ts.MinPromptSteps, sum.DecodeTokens, sum.PrefillTokens)
			}
			e, _, err := traces.EstimateSize(ts.Meta, ts.Sample(), int64(sum.PrefillTokens+sum.DecodeTokens))
			if err != nil {
				t.Fatal(err)
			}
			ratio := float64(e.Bytes()) / float64(st.Size())
			t.Logf("estimate %d B, recorded %d B (%.3f)", e.Bytes(), st.Size(), ratio)
			if ratio < 0.95 || ratio > 1.15 {
				t.Errorf("estimate %d B is %.3f × the recorded %d B", e.Bytes(), ratio, st.Size())
			}
		})
	}
}
