package gguf

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

var (
	calibrate      = flag.Bool("calibrate", false, "print routing statistics of synthetic models across router correlations (slow)")
	calibrateShape = flag.String("calibrate-shape", "mid", "model shape for -calibrate: mid (8 layers, hidden 512) or default (DefaultSynthOptions)")
	calibrateOnly  = flag.String("calibrate-only", "", "comma-separated rho/attention-scale/sharing settings to run instead of the table's, e.g. 0.9/4/0.97")
)

// TestCalibrateRecall prints the routing statistics of synthetic models across
// RouterCorrelation, measured with the reference forward pass on 48 random tokens;
// run with -calibrate (about 15 s for the mid shape, minutes for the default one).
// The table in SynthOptions.RouterCorrelation's doc comes from this test.
func TestCalibrateRecall(t *testing.T) {
	if !*calibrate {
		t.Skip("run with -calibrate")
	}
	type setting struct{ rho, attn, share float64 }
	settings := []setting{{0, 1, 0}, {0.5, 1, 0}, {0.7, 1, 0}, {0.9, 1, 0}, {1, 1, 0}, {0.7, 4, 0}, {0.9, 4, 0},
		{0.7, 4, 0.97}, {0.9, 4, 0.97}}
	if *calibrateShape == "default" {
		settings = []setting{{0, 1, 0}, {0.7, 1, 0}, {0.9, 1, 0}, {1, 1, 0}, {0.7, 2, 0.97}, {0.7, 4, 0.97}, {0.9, 2, 0.97}, {0.9, 4, 0.97}}
	}
	if *calibrateOnly != "" {
		settings = nil
		for _, f := range strings.Split(*calibrateOnly, ",") {
			var c setting
			if _, err := fmt.Sscanf(f, "%g/%g/%g", &c.rho, &c.attn, &c.share); err != nil {
				t.Fatalf("-calibrate-only %q: %v", f, err)
			}
			settings = append(settings, c)
		}
	}
	for _, c := range settings {
		rho := c.rho
		o := SynthOptions{Layers: 8, Experts: 64, TopK: 8, Hidden: 512, ExpertFFN: 128, Heads: 8, HeadsKV: 2, HeadDim: 64,
			Vocab: 512, Quant: "q8_0", Seed: 7}
		if *calibrateShape == "default" {
			o = DefaultSynthOptions()
		}
		o.RouterCorrelation, o.AttentionScale, o.AttentionSharing = rho, c.attn, c.share
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := SynthMoE(path, o); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m := loadRef(t, f)
		f.Close()
		r := rand.New(rand.NewPCG(1, 2))
		toks := make([]int, 48)
		for i := range toks {
			toks[i] = 3 + r.IntN(o.Vocab-3)
		}
		trs := m.run(toks)
		t.Logf("rho %.2f attention %.0f sharing %.2f: update rms %.3f adjacent cos %.3f lookahead recall %.3f same-index %.3f next-token reuse %.3f",
			rho, c.attn, c.share, UpdateRMS(rho), m.adjacentCosine(trs), m.lookaheadRecall(trs), m.sameIndexOverlap(trs), m.nextTokenReuse(trs))
	}
}
