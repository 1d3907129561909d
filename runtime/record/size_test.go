package record

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/traces"
)

// TestEstimateTraceSize: the steps counted before tokenizing are the
// decode tokens exactly plus, per prompt, its bytes over the vocabulary's
// longest token (at least one); the sample steps have the shape Record
// writes for each storage mode, and more columns estimate more bytes.
func TestEstimateTraceSize(t *testing.T) {
	mc, _ := checkSmallSynth(t)
	longest := longestToken(mc.File)
	if longest < 1 || longest > 64 {
		t.Fatalf("longest token %d bytes", longest)
	}
	opt := DefaultOptions()
	opt.Prompts, opt.Tokens = []string{"a", strings.Repeat("x", 3*longest+1)}, 10
	ts := EstimateTraceSize(&opt, mc)
	if ts.DecodeSteps != 20 || ts.MinPromptSteps != 1+4 || ts.Steps() != 25 {
		t.Errorf("steps: %d decode, %d prompt, want 20 and 5", ts.DecodeSteps, ts.MinPromptSteps)
	}
	size := func(edit func(*Options)) int64 {
		t.Helper()
		o := opt
		edit(&o)
		ts := EstimateTraceSize(&o, mc)
		src := ts.Sample()
		n := 0
		for src.Next() {
			n++
			for i, ls := range src.Step().Layers {
				depth := min(o.LookaheadDepth, 2-i)
				if len(ls.Experts) != 2 || len(ls.Weights) != 2 || len(ls.Lookahead) != depth ||
					(len(ls.Logits) == 8) != o.Logits || (len(ls.RouterInput) == 64) != o.RouterInputs {
					t.Fatalf("%+v: layer %d shape: %d experts, %d lookahead, %d logits, %d inputs", o, i, len(ls.Experts), len(ls.Lookahead), len(ls.Logits), len(ls.RouterInput))
				}
			}
		}
		if n != int(ts.Steps()) {
			t.Errorf("sample has %d steps, want %d", n, ts.Steps())
		}
		e, _, err := traces.EstimateSize(ts.Meta, ts.Sample(), 1000)
		if err != nil {
			t.Fatal(err)
		}
		return e.Bytes()
	}
	bare := size(func(o *Options) { o.Logits, o.LookaheadDepth = false, 0 })
	logits := size(func(o *Options) { o.LookaheadDepth = 0 })
	look := size(func(o *Options) { o.LookaheadDepth = 2 })
	inputs := size(func(o *Options) { o.LookaheadDepth, o.RouterInputs = 2, true })
	if !(bare < logits && logits < look && look < inputs) {
		t.Errorf("estimates do not grow with the columns: bare %d, logits %d, lookahead %d, router inputs %d", bare, logits, look, inputs)
	}
}
