package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

var statsRewrite = flag.Bool("rewrite-stats", false, "rewrite traces/testdata/synth-stats.* golden files")

// tsHandSteps is a small trace whose statistics are worked out by hand in
// TestStatsByHand: 2 layers, 4 experts, top-2; seq 0 = one prefill token and
// two decode tokens, seq 1 = two decode tokens.
func tsHandSteps() (Meta, []Step) {
	meta := Meta{Model: *tsSpec(2, 4, 2), LookaheadDepth: 1, Origin: "hand"}
	ls := func(e ...int32) LayerStep { return LayerStep{Experts: e, Weights: []float32{0.6, 0.4}} }
	steps := []Step{
		{Seq: 0, Pos: 0, Phase: Prefill, Pass: 0, Layers: []LayerStep{ls(0, 1), ls(2, 3)}},
		{Seq: 0, Pos: 1, Phase: Decode, Pass: 1, Layers: []LayerStep{ls(1, 2), ls(2, 3)}},
		{Seq: 0, Pos: 2, Phase: Decode, Pass: 2, Layers: []LayerStep{ls(0, 1), ls(3, 0)}},
		{Seq: 1, Pos: 0, Phase: Decode, Pass: 3, Layers: []LayerStep{ls(0, 1), ls(1, 2)}},
		{Seq: 1, Pos: 1, Phase: Decode, Pass: 4, Layers: []LayerStep{ls(1, 0), ls(2, 1)}},
	}
	// Lookahead from layer 0 to layer 1: ties go to the lower expert index.
	steps[1].Layers[0].Lookahead = [][]float32{{1, 5, 5, 0}} // top-2 {1,2} vs truth {2,3}: 1 of 2
	steps[2].Layers[0].Lookahead = [][]float32{{0, 0, 0, 0}} // top-2 {0,1} vs truth {3,0}: 1 of 2
	// Recorded hits on three layer steps only.
	steps[0].Layers[0].Hit = []bool{false, false}
	steps[1].Layers[0].Hit = []bool{true, true}
	steps[1].Layers[1].Hit = []bool{false, false}
	return meta, steps
}

func TestStatsByHand(t *testing.T) {
	meta, steps := tsHandSteps()
	s := tsStats(t, meta, steps)
	lnp := func(p ...float64) float64 { // normalized entropy over 4 experts
		h := 0.0
		for _, x := range p {
			h -= x * math.Log(x)
		}
		return h / math.Log(4)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"tokens", float64(s.Tokens), 5},
		{"prefill", float64(s.PrefillTokens), 1},
		{"decode", float64(s.DecodeTokens), 4},
		{"passes", float64(s.Passes), 5},
		{"sequences", float64(s.Sequences), 2},
		// Pairs: s0p1/s0p0 (1+2), s0p2/s0p1 (1+1), s1p1/s1p0 (2+2); s1p0 starts a sequence.
		{"reuse", s.Reuse, 9.0 / 12},
		{"reuse slots", float64(s.ReuseSlots), 12},
		{"prev-token recall", s.PrevTokenRecall, 9.0 / 12},
		{"layer 0 reuse", s.PerLayer[0].Reuse, 4.0 / 6},
		{"layer 1 reuse", s.PerLayer[1].Reuse, 5.0 / 6},
		// Decode selections: 11 at distance 1, 2 at distance 2, 3 cold.
		{"distance samples", float64(s.ReuseDistance.Samples), 13},
		{"cold", float64(s.ReuseDistance.Cold), 3},
		{"median", float64(s.ReuseDistance.Median), 1},
		{"p90", float64(s.ReuseDistance.P90), 2},
		{"mean", s.ReuseDistance.Mean, 15.0 / 13},
		{"bucket 1", float64(s.ReuseDistance.Buckets[0].Count), 11},
		{"bucket 2-3", float64(s.ReuseDistance.Buckets[1].Count), 2},
		// Decode popularity: layer 0 {e0:3, e1:4, e2:1}, layer 1 {e0:1, e1:2, e2:3, e3:2}.
		{"layer 0 distinct", float64(s.PerLayer[0].Distinct), 3},
		{"layer 1 distinct", float64(s.PerLayer[1].Distinct), 4},
		{"layer 0 top share", s.PerLayer[0].TopShare, 4.0 / 8},
		{"layer 1 top share", s.PerLayer[1].TopShare, 3.0 / 8},
		{"layer 0 entropy", s.PerLayer[0].Entropy, lnp(3.0/8, 4.0/8, 1.0/8)},
		{"layer 1 entropy", s.PerLayer[1].Entropy, lnp(1.0/8, 2.0/8, 3.0/8, 2.0/8)},
		{"layer 0 hot list", s.PerLayer[0].HotListRecall, 7.0 / 8},
		{"layer 1 hot list", s.PerLayer[1].HotListRecall, 5.0 / 8},
		{"hot list", s.HotListRecall, 12.0 / 16},
		{"lookahead recall", s.Lookahead[0].Recall, 2.0 / 4},
		{"lookahead slots", float64(s.Lookahead[0].Slots), 4},
		{"hit decode", s.Hits.Decode, 2.0 / 4},
		{"hit overall", s.Hits.Overall, 2.0 / 6},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.PopularityScope != "decode" || s.HotList != 2 || s.TopShare != 0.1 {
		t.Errorf("scope %q hot list %d top share %v", s.PopularityScope, s.HotList, s.TopShare)
	}
}

func TestStatsPrefillOnlyAndOptions(t *testing.T) {
	meta, steps := tsHandSteps()
	s, err := ComputeStats(meta, &tsSource{steps: steps[:1]}, StatsOptions{HotList: 1, TopShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	// No decode token: popularity over all tokens, no reuse pairs, no distances.
	if s.PopularityScope != "all" || s.PerLayer[0].Distinct != 2 || s.PerLayer[0].HotListRecall != 0.5 ||
		s.PerLayer[0].TopShare != 1 || s.Reuse != 0 || s.ReuseDistance.Samples != 0 || s.Hits.DecodeSlots != 0 || s.Lookahead != nil {
		t.Errorf("prefill-only stats = %+v", s)
	}
	// Its zeros are over no decode token: the text and JSON say so.
	if !slices.Equal(s.Warnings, []string{NoDecodeWarning}) || !strings.HasSuffix(s.String(), "\nwarnings:\n  - "+NoDecodeWarning+"\n") {
		t.Errorf("prefill-only stats: warnings %q, text ends\n%s", s.Warnings, s.String()[max(0, len(s.String())-300):])
	}
	if js, err := s.MarshalJSONIndent(); err != nil || !strings.Contains(string(js), `"warnings": [`) {
		t.Errorf("prefill-only JSON lacks warnings (%v)", err)
	}
	full, err := ComputeStats(meta, &tsSource{steps: steps}, StatsOptions{})
	if err != nil || full.Warnings != nil || strings.Contains(full.String(), "warnings") {
		t.Errorf("a trace with decode tokens warns: %q (%v)", full.Warnings, err)
	}
}

// tsFailSource yields its steps then fails.
type tsFailSource struct{ tsSource }

func (s *tsFailSource) Err() error { return errors.New("disk on fire") }

func TestStatsErrors(t *testing.T) {
	meta, steps := tsHandSteps()
	bad := func(mod func([]Step)) []Step {
		c := tsClone(steps)
		mod(c)
		return c
	}
	for _, tc := range []struct {
		name  string
		meta  Meta
		src   Source
		opt   StatsOptions
		wants []string
	}{
		{"layers", meta, &tsSource{steps: bad(func(s []Step) { s[2].Layers = s[2].Layers[:1] })}, StatsOptions{},
			[]string{"step 2 (seq 0 pos 2): 1 layers, the model has 2"}},
		{"expert", meta, &tsSource{steps: bad(func(s []Step) { s[3].Layers[1].Experts[1] = 4 })}, StatsOptions{},
			[]string{"step 3 (seq 1 pos 0) layer 1: expert 4 out of range [0, 4)"}},
		{"hits", meta, &tsSource{steps: bad(func(s []Step) { s[1].Layers[1].Hit = []bool{true} })}, StatsOptions{},
			[]string{"layer 1: 1 hit flags for 2 experts"}},
		{"scores", meta, &tsSource{steps: bad(func(s []Step) { s[1].Layers[0].Lookahead = [][]float32{{1}} })}, StatsOptions{},
			[]string{"depth-1 scores have 1 values"}},
		{"scores past the end", meta, &tsSource{steps: bad(func(s []Step) { s[1].Layers[1].Lookahead = [][]float32{{1, 2, 3, 4}} })}, StatsOptions{},
			[]string{"depth-1 scores point past the last layer"}},
		{"source error", meta, &tsFailSource{tsSource{steps: steps}}, StatsOptions{}, []string{"disk on fire"}},
		{"options", Meta{}, &tsSource{}, StatsOptions{HotList: -1, TopShare: 2},
			[]string{"no MoE layers", "0 experts", "hot list size -1", "top share 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ComputeStats(tc.meta, tc.src, tc.opt)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestStatsGolden pins the text and JSON renderings of a small synthetic trace
// (and with them the generator's output). Regenerate with -rewrite-stats and
// read the diff.
func TestStatsGolden(t *testing.T) {
	opt := DefaultSynthOptions()
	opt.Tokens, opt.PromptTokens, opt.Sequences, opt.LookaheadDepth, opt.Seed = 40, 5, 2, 2, 7
	meta, src, err := SynthSource(tsSpec(4, 16, 2), opt)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ComputeStats(meta, src, StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := s.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	js, err := s.MarshalJSONIndent()
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != txt.String() {
		t.Error("String differs from WriteText")
	}
	for _, g := range []struct {
		path string
		got  []byte
	}{{"testdata/synth-stats.txt", txt.Bytes()}, {"testdata/synth-stats.json", js}} {
		if *statsRewrite {
			if err := os.WriteFile(g.path, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(g.path)
		if err != nil {
			t.Fatalf("%v (run with -rewrite-stats)", err)
		}
		if !bytes.Equal(g.got, want) {
			t.Errorf("%s differs from the golden file (run with -rewrite-stats and read the diff):\n%s", g.path, g.got)
		}
	}
	// The JSON keys are snake_case and round-trip.
	var back Stats
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"next_token_reuse"`) || back.Reuse != s.Reuse || len(back.PerLayer) != 4 {
		t.Errorf("JSON round trip: %+v", back)
	}
}
