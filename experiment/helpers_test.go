package experiment

import (
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// writeTrace writes a synthetic trace of the default model (tokens decode
// tokens, prompt prefill tokens, lookahead depth) to a temporary file, after
// edit (if not nil) changed its steps, and returns the path.
func writeTrace(t testing.TB, tokens, prompt, depth int, edit func([]traces.Step)) string {
	t.Helper()
	m, err := devices.LookupModel(DefaultModel, "")
	if err != nil {
		t.Fatal(err)
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.LookaheadDepth, o.Seed = tokens, prompt, depth, 3
	meta, steps, err := traces.Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(steps)
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
	return path
}

// pairPasses makes decode tokens verify in pairs: two tokens per pass.
func pairPasses(steps []traces.Step) {
	base, k := int32(0), int32(0)
	for i := range steps {
		if steps[i].Phase == traces.Prefill {
			steps[i].Pass, base = 0, 1
			continue
		}
		steps[i].Pass = base + k/2
		k++
	}
}
