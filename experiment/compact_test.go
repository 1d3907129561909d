package experiment

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

// writeSynth writes the synthetic trace of the default model (prompt and
// decode tokens, depth-2 lookahead) with lookahead stored compactly when top
// > 0, and returns the path.
func writeSynth(t testing.TB, top int) string {
	t.Helper()
	m, err := devices.LookupModel(DefaultModel, "")
	if err != nil {
		t.Fatal(err)
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.LookaheadDepth, o.Seed = 40, 6, 2, 9
	meta, src, err := traces.SynthSource(m, o)
	if err != nil {
		t.Fatal(err)
	}
	meta.LookaheadTop = top
	path := filepath.Join(t.TempDir(), "synth.parquet")
	if err := traces.WriteFile(path, meta, src); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompactLookaheadSameResults: les gives the same result on a trace whose
// lookahead is stored as full score vectors and on the same trace stored
// compactly with as many candidates as les asks for (top-n mode, threshold
// mode with its softmax sums, depth 2, fewer candidates than stored).
func TestCompactLookaheadSameResults(t *testing.T) {
	full, compact := writeSynth(t, 0), writeSynth(t, 16)
	for _, o := range []map[string]string{
		{"top-n": "16"},
		{"top-n": "5", "depth": "2"},
		{"threshold": "0.9", "max-candidates": "16"},
		{"threshold": "0.5", "max-candidates": "12", "depth": "2", "cached-first": "true"},
	} {
		var res [2]string
		for i, path := range []string{full, compact} {
			opts := map[string]string{"trace": path, "policy": "les", "cache": "2GiB"}
			for k, v := range o {
				opts[k] = v
			}
			s, err := FromOptions(opts)
			if err != nil {
				t.Fatal(err)
			}
			out, err := (&Inputs{}).Resolve(s)
			if err != nil {
				t.Fatal(err)
			}
			r, err := out.Run()
			if err != nil {
				t.Fatal(err)
			}
			if r.Result.PrefetchRequested == 0 {
				t.Errorf("%v: les prefetched nothing", o)
			}
			b, err := json.Marshal(r.Result)
			if err != nil {
				t.Fatal(err)
			}
			res[i] = string(b)
		}
		if res[0] != res[1] {
			t.Errorf("%v: les differs with compact lookahead:\n%s\n%s", o, res[0], res[1])
		}
	}
	s, err := FromOptions(map[string]string{"trace": compact, "policy": "les", "cache": "2GiB", "top-n": "17"})
	if err != nil {
		t.Fatal(err)
	}
	errgolden.Check(t, "top-n above lookahead_top", errgolden.Err((&Inputs{}).Resolve(s)))
}
