package experiment

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

func TestDefaultsMatchTraces(t *testing.T) {
	y, o := DefaultSynthetic(), traces.DefaultSynthOptions()
	got := traces.SynthOptions{Seed: y.Seed, Tokens: y.Tokens, PromptTokens: y.PromptTokens, Sequences: y.Sequences, Skew: y.Skew,
		Reuse: y.Reuse, LookaheadRecall: y.LookaheadRecall, LookaheadDepth: y.LookaheadDepth, DepthPenalty: y.DepthPenalty}
	if got != o {
		t.Errorf("DefaultSynthetic %+v differs from traces.DefaultSynthOptions %+v", got, o)
	}
	p, po := DefaultPredictor(), traces.DefaultPredictOptions()
	if p.Recall != po.Recall || p.FalsePositives != po.FalsePositives || p.DepthPenalty != po.DepthPenalty || p.Depth != po.Depth || p.Seed != po.Seed {
		t.Errorf("DefaultPredictor %+v differs from traces.DefaultPredictOptions %+v", p, po)
	}
}

// full is a spec with every group present (not a valid one: les and
// pinned-hot at once), so that walking it reaches every field.
func full(t *testing.T) Spec {
	dev, err := devices.LoadDevice(DefaultDevice)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSpec()
	s.Trace.Path, s.Trace.SHA256 = "t.parquet", strings.Repeat("ab", 32)
	s.Model.Variant = "q4_k_m"
	s.ExpertQuant = "Q3_K"
	s.Trace.Synthetic.PromptTokens = 3
	p := DefaultPredictor()
	s.Predictor = &p
	s.Device.File, s.Device.Profile = "d.yaml", dev
	s.Policy.LES = &LES{TopN: 4, Threshold: 0.5, MaxCandidates: 9, Depth: 2, MaxInflightBytes: 1 << 20, NoPrefetch: true}
	s.Policy.PinnedHot = &PinnedHot{PinFraction: 0.3}
	s.Cache.Bytes = 3 << 30
	sp := DefaultSpeculative()
	s.Speculative = &sp
	s.SpecFromTrace, s.Prefill, s.ContextTokens = true, true, 100
	return s
}

func TestHashEveryFieldCounts(t *testing.T) {
	base := full(t)
	h0 := base.Hash()
	n := len(leaves(reflect.ValueOf(&base), ""))
	if n < 50 {
		t.Fatalf("walked only %d fields", n)
	}
	for i := range n {
		s := full(t)
		l := leaves(reflect.ValueOf(&s), "")[i]
		mutate(l)
		if s.Hash() == h0 {
			t.Errorf("changing %s does not change the hash", l.path)
		}
	}
}

func TestHashIgnoresSpelling(t *testing.T) {
	a := `{"version":1,"model":{"name":"minicpm-v-4.7-35b-a3b"},"trace":{"synthetic":{"tokens":300,"seed":7}},
	       "device":{"name":"ipad-pro-m4"},"policy":{"name":"les","les":{"top_n":4,"depth":1}},"cache":{"size":"3GiB"},
	       "layout":"per-expert","cached_first":true,"speculative":{"block":3,"accept":0.5}}`
	b := `{
	  "speculative": {"accept": 5e-1, "block": 3},
	  "cached_first": true, "layout": "per-expert",
	  "cache": {"size": "3GiB"},
	  "policy": {"les": {"depth": 1, "top_n": 4}, "name": "les"},
	  "device": {"name": "ipad-pro-m4"},
	  "trace": {"synthetic": {"seed": 7, "tokens": 300.0e0}},
	  "model": {"name": "minicpm-v-4.7-35b-a3b"}, "version": 1
	}`
	sa, err := Parse([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte(b)); err == nil {
		t.Fatalf("300.0e0 is not an integer, want an error")
	}
	b = strings.Replace(b, "300.0e0", "300", 1)
	sb, err := Parse([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if sa.Hash() != sb.Hash() || !reflect.DeepEqual(sa, sb) {
		t.Errorf("same spec, different hash:\n%+v\n%+v", sa, sb)
	}
	// Absent fields took the defaults.
	if sa.Trace.Synthetic.Reuse != 0.45 || sa.Speculative.AcceptSeed != 1 {
		t.Errorf("defaults not applied: %+v %+v", sa.Trace.Synthetic, sa.Speculative)
	}
}

func TestParseRoundTrip(t *testing.T) {
	s := full(t)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) || got.Hash() != s.Hash() {
		t.Errorf("round trip changed the spec:\n%+v\n%+v", got, s)
	}
	// Inside a result, with its hash.
	wrapped, _ := json.Marshal(map[string]any{"spec": s, "spec_hash": s.Hash(), "result": map[string]any{"tokens": 1}})
	if got, err = Parse(wrapped); err != nil || got.Hash() != s.Hash() {
		t.Errorf("result JSON: %v", err)
	}
	edited, _ := json.Marshal(map[string]any{"spec": DefaultSpec(), "spec_hash": s.Hash()})
	errgolden.Check(t, "edited", errgolden.Err(Parse(edited)))
	// Passes from the trace with a drafter: only the drafter is stated, and
	// it reads back as written (no speculative defaults filled in).
	r, err := FromOptions(map[string]string{"trace": "t.parquet", "spec-from-trace": "true", "drafter": "model", "drafter-bytes": "100MB"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(r)
	if got, err = Parse(data); err != nil || !reflect.DeepEqual(got, r) || !reflect.DeepEqual(*got.Speculative, Speculative{Drafter: &Drafter{Kind: DrafterModel, Bytes: 100e6}}) {
		t.Errorf("spec_from_trace with a drafter: %v\n%s\n%+v", err, data, got.Speculative)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in string }{
		{`[]`},
		{`null`},
		{`{"policy":{"name":"lru","topn":3}}`},
		{`{"trace":{"synthetic":{"tokns":3}}}`},
		{`{"inputs":{}}`},
		{`{"spec":{},"extra":1}`},
		{"{\n  \"version\": 1,\n  \"layout\": }"},
		{`{"version":1} {}`},
		{`{"cache":{"bytes":1e400}}`},
		// Type errors in the spec's own words: its field paths, no Go types.
		{`{"device":{"profile":{"ram_bytes":1e300}}}`},
		{`{"trace":{"synthetic":{"tokens":50.5}}}`},
		{`{"predictor":{"recall":"x"}}`},
		{`{"speculative":{"block":true}}`},
		{`{"spec":{},"spec_hash":5}`},
	} {
		_, err := Parse([]byte(tc.in))
		errgolden.Check(t, tc.in, err)
	}
}

// validSpecs are valid specs that between them hold every group.
func validSpecs(t *testing.T) map[string]Spec {
	dev, err := devices.LoadDevice(DefaultDevice)
	if err != nil {
		t.Fatal(err)
	}
	a := DefaultSpec()
	a.Device.Profile = dev
	a.Policy.LES = &LES{Threshold: 0.9, MaxCandidates: 12, Depth: 1, MaxInflightBytes: 1 << 26}
	sp := DefaultSpeculative()
	sp.Drafter = &Drafter{Kind: DrafterExplicit, Bytes: 1 << 20, FLOPs: 1e9}
	a.Speculative = &sp
	a.Trace.Synthetic.PromptTokens = 4
	a.Prefill = true

	b := DefaultSpec()
	b.Model, b.Trace = nil, Trace{Path: "t.parquet"}
	b.Policy = Policy{Name: "pinned-hot", PinnedHot: &PinnedHot{PinFraction: 0.25}}
	b.SpecFromTrace = true

	c := DefaultSpec()
	c.Model, c.Trace = nil, Trace{Path: "t.parquet"}
	p := DefaultPredictor()
	c.Predictor = &p // NB: les reads the stated predictor's scores
	return map[string]Spec{"synthetic-les-spec": a, "file-pinned": b, "file-predictor-les": c}
}

func TestValidateRefusesNonFinite(t *testing.T) {
	for name, base := range validSpecs(t) {
		if err := base.Validate(); err != nil {
			t.Fatalf("%s: base spec invalid: %v", name, err)
		}
		n := len(floats(&base))
		for i := range n {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				s := validSpecs(t)[name] // fresh: the profile is shared by clones
				l := floats(&s)[i]
				l.v.SetFloat(bad)
				if err := s.Validate(); err == nil {
					t.Errorf("%s: %s = %v passes Validate", name, l.path, bad)
				}
			}
		}
	}
}

// TestParseRefusesDuplicatesAndEmpty: a key given twice is refused with
// its path and line (encoding/json keeps the last), in a bare spec and in a
// result's; null or "" where absence means the default is refused too.
func TestParseRefusesDuplicatesAndEmpty(t *testing.T) {
	for _, tc := range []struct{ in string }{
		{`{"policy":{"name":"lru"},"policy":{"name":"les"}}`},
		{"{\"spec\":{\"cache\":{\"size\":\"3GiB\",\n\"size\":\"auto\"}}}"},
		{`{"device":{"profile":{"flash":{"lanes":4,"lanes":8}}}}`},
		{`{"policy":{"name":null}}`},
		{`{"policy":null}`},
		{`{"cache":{"size":""}}`},
		{`{"layout":""}`},
	} {
		_, err := Parse([]byte(tc.in))
		errgolden.Check(t, tc.in, err)
	}
	if _, err := Parse([]byte(`{"policy":{"name":"lru"},"cache":{"size":"3GiB"}}`)); err != nil {
		t.Errorf("a spec without repeats or empties: %v", err)
	}
}

// TestParseResultWithoutSpec: a result's JSON whose spec is missing or null
// says so, instead of naming spec_hash an unknown spec field.
func TestParseResultWithoutSpec(t *testing.T) {
	for _, tc := range []struct{ in string }{
		{`{"spec_hash":"ab","result":{}}`},
		{`{"result":{}}`},
		{`{"spec":null,"spec_hash":"ab"}`},
	} {
		_, err := Parse([]byte(tc.in))
		errgolden.Check(t, tc.in, err)
	}
}
