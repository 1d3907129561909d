package traces

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
)

// tsNoLookahead is a synthetic trace without scores (as an import would be).
func tsNoLookahead(t *testing.T, L, E, K, tokens int) (Meta, []Step) {
	t.Helper()
	opt := DefaultSynthOptions()
	opt.Tokens, opt.LookaheadDepth, opt.PromptTokens = tokens, 0, 4
	meta, steps, err := Synth(tsSpec(L, E, K), opt)
	if err != nil {
		t.Fatal(err)
	}
	return meta, steps
}

// tsClone deep-copies the routing fields PredictLookahead must not touch.
func tsClone(steps []Step) []Step {
	out := make([]Step, len(steps))
	for i, st := range steps {
		out[i] = st
		out[i].Layers = make([]LayerStep, len(st.Layers))
		for l, ls := range st.Layers {
			out[i].Layers[l] = LayerStep{
				Experts: append([]int32(nil), ls.Experts...),
				Weights: append([]float32(nil), ls.Weights...),
				Hit:     append([]bool(nil), ls.Hit...),
			}
		}
	}
	return out
}

func TestPredictRecall(t *testing.T) {
	meta, steps := tsNoLookahead(t, 24, 128, 8, 400)
	for _, tc := range []struct {
		name          string
		recall, fp    float64
		depth         int
		topkTolerance float64 // top-k recall falls below R when high sets exceed k
	}{
		{"no false positives", 0.807, 0, 2, 0.02},
		{"low recall", 0.35, 0, 1, 0.02},
		{"perfect", 1, 0, 1, 0},
		{"default fp", 0.807, 1.5, 3, 0.06},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tsClone(steps)
			opt := DefaultPredictOptions()
			opt.Recall, opt.FalsePositives, opt.Depth = tc.recall, tc.fp, tc.depth
			pm, ps, err := PredictLookahead(meta, steps, opt)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tsClone(ps), before) || !reflect.DeepEqual(tsClone(steps), before) {
				t.Fatal("PredictLookahead altered experts, weights or hits")
			}
			if pm.LookaheadDepth != tc.depth || !strings.HasPrefix(pm.Info["predictor"], "stated recall") || meta.LookaheadDepth != 0 {
				t.Errorf("meta = %+v (input depth %d)", pm, meta.LookaheadDepth)
			}
			st := tsStats(t, pm, ps)
			for d, dr := range st.Lookahead {
				// A top-k policy also picks up missed true experts by chance when
				// fewer than k experts score high: about (1−R)·(k−kR−fp)/(E−kR−fp).
				want := tc.recall - float64(d)*opt.DepthPenalty
				high := 8*want + tc.fp
				want += (1 - want) * max(0, 8-high) / (128 - high)
				if dr.Recall > want+0.02 || dr.Recall < want-tc.topkTolerance {
					t.Errorf("depth %d: top-k recall %.4f, want %.4f (−%.2f/+0.02)", d+1, dr.Recall, want, tc.topkTolerance)
				}
			}
			// Threshold view: scores ≥ 3 are exactly the high set.
			var hiTrue, nTrue, hiFalse, vecs float64
			for _, s := range ps {
				for l, ls := range s.Layers {
					if len(ls.Lookahead) > 0 {
						truth := s.Layers[l+1].Experts
						vecs++
						for e, v := range ls.Lookahead[0] {
							isTrue := false
							for _, x := range truth {
								isTrue = isTrue || int(x) == e
							}
							switch {
							case isTrue:
								nTrue++
								if v >= 3 {
									hiTrue++
								}
							case v >= 3:
								hiFalse++
							}
						}
					}
				}
			}
			if math.Abs(hiTrue/nTrue-tc.recall) > 0.02 || math.Abs(hiFalse/vecs-tc.fp) > 0.05 {
				t.Errorf("threshold recall %.4f (want %.3f), false positives %.3f per vector (want %.2f)", hiTrue/nTrue, tc.recall, hiFalse/vecs, tc.fp)
			}
		})
	}
}

func TestPredictDeterministicAndShape(t *testing.T) {
	meta, steps := tsNoLookahead(t, 5, 16, 2, 20)
	opt := DefaultPredictOptions()
	opt.Depth = 3
	_, a, err := PredictLookahead(meta, steps, opt)
	if err != nil {
		t.Fatal(err)
	}
	_, b, _ := PredictLookahead(meta, steps, opt)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different scores")
	}
	opt.Seed = 2
	_, c, _ := PredictLookahead(meta, steps, opt)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same scores")
	}
	for _, st := range a {
		for l, ls := range st.Layers {
			if want := min(3, 4-l); len(ls.Lookahead) != want {
				t.Fatalf("layer %d: %d vectors, want %d", l, len(ls.Lookahead), want)
			}
			for _, v := range ls.Lookahead {
				if len(v) != 16 {
					t.Fatalf("layer %d: %d scores", l, len(v))
				}
			}
		}
	}
}

func TestPredictImported(t *testing.T) {
	meta, steps, err := ImportBMoE("testdata/bmoe-small.csv")
	if err != nil {
		t.Fatal(err)
	}
	pm, ps, err := PredictLookahead(meta, steps, DefaultPredictOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Prefill tokens 0 and 1 of turn 0 have no layer-1 selection: no scores to predict it.
	if ps[0].Layers[0].Lookahead[0] != nil || ps[2].Layers[0].Lookahead[0] == nil || ps[2].Layers[1].Lookahead != nil {
		t.Errorf("lookahead of turn 0 prefill: %v / %v / %v", ps[0].Layers[0].Lookahead, ps[2].Layers[0].Lookahead, ps[2].Layers[1].Lookahead)
	}
	if pm.Info["attribution"] != meta.Info["attribution"] || meta.Info["predictor"] != "" {
		t.Error("Info not carried over, or the input meta was modified")
	}
	if _, err := ComputeStats(pm, &tsSource{steps: ps}, StatsOptions{}); err != nil {
		t.Errorf("stats of the predicted trace: %v", err)
	}
}

func TestPredictValidate(t *testing.T) {
	meta, steps := tsNoLookahead(t, 4, 16, 4, 5)
	withScores := meta
	withScores.LookaheadDepth = 1
	for _, tc := range []struct {
		name string
		meta Meta
		mod  func(*PredictOptions)
		want []string
	}{
		{"all problems at once", meta, func(o *PredictOptions) {
			o.Depth, o.Recall, o.FalsePositives, o.DepthPenalty = 0, 1.2, -1, -0.5
		}, []string{"depth 0 must be in [1, 3]", "recall 1.2", "false positives -1", "depth penalty -0.5"}},
		{"too many false positives", meta, func(o *PredictOptions) { o.FalsePositives = 13 }, []string{"[0, experts − top-k = 12]"}},
		{"already scored", withScores, func(*PredictOptions) {}, []string{"already carries lookahead scores"}},
		{"one layer", Meta{Model: *tsSpec(1, 8, 2)}, func(*PredictOptions) {}, []string{"lookahead needs ≥ 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := DefaultPredictOptions()
			tc.mod(&opt)
			_, _, err := PredictLookahead(tc.meta, steps, opt)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	opt := DefaultPredictOptions()
	opt.Replace = true
	if _, _, err := PredictLookahead(withScores, steps, opt); err != nil {
		t.Errorf("Replace: %v", err)
	}
	bad := tsClone(steps)
	bad[3].Layers[2].Experts[0] = 99
	if _, _, err := PredictLookahead(meta, bad, DefaultPredictOptions()); err == nil || !strings.Contains(err.Error(), "step 3 (seq 0 pos 3) layer 2: expert 99 out of range") {
		t.Errorf("bad expert: %v", err)
	}
}

// TestPredictedTraceRoundTrip writes a synthetic trace with predicted scores
// through the Parquet writer and reader: the statistics must not change.
func TestPredictedTraceRoundTrip(t *testing.T) {
	meta, steps := tsNoLookahead(t, 6, 32, 4, 60)
	pm, ps, err := PredictLookahead(meta, steps, PredictOptions{Depth: 2, Recall: 0.8, FalsePositives: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, pm)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		if err := w.Write(&ps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "mem.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := ComputeStats(r.Meta(), r, StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := tsStats(t, pm, ps)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stats after a Parquet round trip differ:\n got %+v\nwant %+v", got, want)
	}
	if got.Lookahead[0].Slots == 0 || r.Meta().Info["predictor"] != pm.Info["predictor"] {
		t.Errorf("scores or predictor info lost: %+v %q", got.Lookahead, r.Meta().Info["predictor"])
	}
}
