//go:build llamacpp

package record

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/llama"
	"github.com/lessim/lessim/traces"
)

// testShape is a small synthetic qwen3moe model: records in well under a second.
func testShape(rho float64) gguf.SynthOptions {
	o := gguf.DefaultSynthOptions()
	o.Layers, o.Experts, o.TopK, o.Hidden, o.ExpertFFN, o.Vocab = 6, 16, 4, 256, 128, 512
	o.Heads, o.HeadsKV, o.HeadDim = 4, 2, 64
	o.RouterCorrelation = rho
	return o
}

var (
	modelMu    sync.Mutex
	modelDir   string
	modelCache = map[float64]string{}
)

// synthModel writes (once per test binary) a test model with the given router correlation.
func synthModel(t testing.TB, rho float64) string {
	t.Helper()
	modelMu.Lock()
	defer modelMu.Unlock()
	if p, ok := modelCache[rho]; ok {
		return p
	}
	if modelDir == "" {
		modelDir = mustTempDir(t)
	}
	p := filepath.Join(modelDir, fmt.Sprintf("synth-rho%.2f.gguf", rho))
	if err := gguf.SynthMoE(p, testShape(rho)); err != nil {
		t.Fatal(err)
	}
	modelCache[rho] = p
	return p
}

func mustTempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "lessim-record-test")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestMain(m *testing.M) {
	code := errgolden.Main(m)
	if modelDir != "" {
		os.RemoveAll(modelDir)
	}
	os.Exit(code)
}

var testPrompts = []string{"The old lighthouse keeper climbed the stairs", "func add(a, b int) int { return a + b }", "1, 2, 3, 5, 8, 13,"}

func record(t *testing.T, rho float64, edit func(*Options)) (*Summary, []traces.Step) {
	t.Helper()
	o := DefaultOptions()
	o.ModelPath = synthModel(t, rho)
	o.Prompts = testPrompts
	o.Tokens = 12
	o.Out = filepath.Join(t.TempDir(), "trace.parquet")
	if edit != nil {
		edit(&o)
	}
	sum, err := Record(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return sum, readTrace(t, o.Out)
}

// readTrace reads every step back with the traces reader (which validates each one).
func readTrace(t *testing.T, path string) []traces.Step {
	t.Helper()
	r, err := traces.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var steps []traces.Step
	for r.Next() {
		s := *r.Step()
		s.Layers = slices.Clone(s.Layers)
		for i := range s.Layers {
			ls := &s.Layers[i]
			ls.Experts, ls.Weights, ls.Logits, ls.RouterInput = slices.Clone(ls.Experts), slices.Clone(ls.Weights), slices.Clone(ls.Logits), slices.Clone(ls.RouterInput)
			la := make([][]float32, len(ls.Lookahead))
			for d, sc := range ls.Lookahead {
				la[d] = slices.Clone(sc)
			}
			ls.Lookahead = la
		}
		steps = append(steps, s)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}

func TestRecordShapeAndMeta(t *testing.T) {
	var progress [][2]int
	sum, steps := record(t, 0.7, func(o *Options) {
		o.RouterInputs, o.LookaheadDepth = true, 2
		o.Progress = func(done, total int) { progress = append(progress, [2]int{done, total}) }
	})
	sh := testShape(0.7)
	if len(progress) != 36 || progress[0] != [2]int{1, 36} || progress[35] != [2]int{36, 36} {
		t.Errorf("progress calls %v, want (1,36)..(36,36)", progress)
	}
	prefill := 0
	var passes []int32
	for _, s := range steps {
		if s.Phase == traces.Prefill {
			prefill++
		}
		if len(passes) == 0 || passes[len(passes)-1] != s.Pass {
			passes = append(passes, s.Pass)
		}
	}
	if got, want := len(steps), sum.PrefillTokens+sum.DecodeTokens; got != want {
		t.Fatalf("%d steps read back, summary says %d", got, want)
	}
	if sum.DecodeTokens != 3*12 || prefill != sum.PrefillTokens {
		t.Errorf("decode tokens %d (want 36), prefill steps %d vs summary %d", sum.DecodeTokens, prefill, sum.PrefillTokens)
	}
	// One pass per prefill plus one per decode token, numbered in order.
	if want := 3 + 36; len(passes) != want || !slices.IsSorted(passes) || passes[0] != 0 || int(passes[len(passes)-1]) != want-1 {
		t.Errorf("passes %v: want 0..%d in order", passes, want-1)
	}
	m := sum.Meta
	if m.Origin != "record" || m.LookaheadDepth != 2 || !m.HasLogits || !m.HasRouterInputs || len(m.Model.Layers) != sh.Layers || m.Model.Experts != sh.Experts {
		t.Errorf("meta %+v", m)
	}
	for _, k := range []string{"model_sha256", "engine", "prompt_set", "prompt_set_sha256", "seed", "threads", "lessim_version", "arch"} {
		if m.Info[k] == "" {
			t.Errorf("meta info %q missing", k)
		}
	}
	for _, s := range steps {
		for i, ls := range s.Layers {
			if want := min(2, sh.Layers-1-i); len(ls.Lookahead) != want {
				t.Fatalf("seq %d pos %d layer %d: %d lookahead depths, want %d", s.Seq, s.Pos, i, len(ls.Lookahead), want)
			}
			if (s.Phase == traces.Decode) != (ls.ComputeNS > 0) {
				t.Fatalf("seq %d pos %d layer %d %s: compute_ns %d", s.Seq, s.Pos, i, s.Phase, ls.ComputeNS)
			}
		}
	}
}

// TestRecordBuiltinPrompts records the default prompt set. (1 thread: ggml's
// spinning workers make 2 threads 30× slower when the shared cores are busy.)
func TestRecordBuiltinPrompts(t *testing.T) {
	sum, steps := record(t, 0.7, func(o *Options) { o.Prompts, o.Tokens = nil, 2 })
	b := Builtin()
	if sum.Prompts != len(b.Prompts) || sum.Meta.Info["prompt_set"] != BuiltinPromptSet || sum.Meta.Info["prompt_set_sha256"] != b.Hash {
		t.Errorf("summary %d prompts, info %v; want the %d built-in prompts", sum.Prompts, sum.Meta.Info, len(b.Prompts))
	}
	if last := steps[len(steps)-1]; int(last.Seq) != len(b.Prompts)-1 || last.Phase != traces.Decode {
		t.Errorf("last step seq %d %s", last.Seq, last.Phase)
	}
}

// TestTraceMatchesEngine ties the recorded values to the model weights: the
// router logits recomputed from the recorded router input, the selection
// recomputed from the logits, the gate weights recomputed from the logits
// (softmax over the selection, normalized: qwen3moe), and the lookahead scores
// recomputed from the next layer's router.
func TestTraceMatchesEngine(t *testing.T) {
	sum, steps := record(t, 0.7, func(o *Options) { o.RouterInputs = true; o.LookaheadDepth = 1 })
	f, err := gguf.Open(synthModel(t, 0.7))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	moe, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	var W [][]float32
	for _, l := range moe.Layers {
		w, err := f.ReadTensorF32(l.Router)
		if err != nil {
			t.Fatal(err)
		}
		W = append(W, w)
	}
	k, nx, ne := moe.TopK, moe.Experts, moe.Hidden
	var worstLogit, worstWeight float64
	for _, s := range steps {
		for i, ls := range s.Layers {
			got := refScores(W[i], ls.RouterInput, nx, ne)
			worstLogit = max(worstLogit, relErr(got, ls.Logits))
			if want := refTopK(ls.Logits, k); !slices.Equal(ls.Experts, want) {
				t.Fatalf("seq %d pos %d layer %d: experts %v, top-%d of logits %v", s.Seq, s.Pos, i, ls.Experts, k, want)
			}
			worstWeight = max(worstWeight, relErr(refWeights(ls.Logits, ls.Experts), ls.Weights))
			if i+1 < len(s.Layers) {
				if e := relErr(refScores(W[i+1], ls.RouterInput, nx, ne), ls.Lookahead[0]); e > 1e-6 {
					t.Fatalf("seq %d pos %d layer %d: lookahead off by %g", s.Seq, s.Pos, i, e)
				}
			}
		}
	}
	t.Logf("%d steps: worst relative error logits %.2g, gate weights %.2g", len(steps), worstLogit, worstWeight)
	if worstLogit > 1e-5 || worstWeight > 1e-5 {
		t.Errorf("recomputation disagrees with the engine: logits %g, weights %g (want <= 1e-5)", worstLogit, worstWeight)
	}
	if sum.Meta.Model.TopK != k {
		t.Errorf("meta top-k %d, want %d", sum.Meta.Model.TopK, k)
	}
}

// TestCaptureKeepsTokens decodes the same prompts with the bare binding (no
// eval callback) and checks the recorder generated the same tokens.
func TestCaptureKeepsTokens(t *testing.T) {
	for _, temp := range []float32{0, 0.8} {
		sum, _ := record(t, 0.7, func(o *Options) { o.Temperature = temp; o.Seed = 42 })
		m, err := llama.Load(synthModel(t, 0.7), llama.ModelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.NewContext(llama.ContextOptions{Ctx: 256, Batch: 64})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range testPrompts {
			toks, _ := m.Tokenize(p, true)
			s, _ := llama.NewSampler(llama.SamplerOptions{Temperature: temp, TopK: 40, Seed: 42 + uint64(i)})
			c.Reset()
			if err := c.DecodeAll(toks); err != nil {
				t.Fatal(err)
			}
			var gen []int32
			for range 12 {
				tok := s.Sample(c)
				gen = append(gen, tok)
				if err := c.Decode([]int32{tok}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			if !slices.Equal(gen, sum.Generated[i]) {
				t.Errorf("temperature %g prompt %d: recorder generated %v, plain decode %v", temp, i, sum.Generated[i], gen)
			}
		}
		c.Close()
		m.Close()
	}
}

// TestDeterministic: same inputs and seed give byte-identical routing columns.
func TestDeterministic(t *testing.T) {
	_, a := record(t, 0.7, nil)
	_, b := record(t, 0.7, nil)
	if len(a) != len(b) {
		t.Fatalf("%d vs %d steps", len(a), len(b))
	}
	for n := range a {
		for i := range a[n].Layers {
			x, y := a[n].Layers[i], b[n].Layers[i]
			if !slices.Equal(x.Experts, y.Experts) || !slices.Equal(x.Weights, y.Weights) || !slices.Equal(x.Logits, y.Logits) ||
				!slices.EqualFunc(x.Lookahead, y.Lookahead, slices.Equal) {
				t.Fatalf("step %d layer %d differs between runs", n, i)
			}
		}
	}
}

// TestLookaheadRecallFollowsCorrelation: on synthetic models whose adjacent
// routers agree more, the depth-1 lookahead predicts more of the next layer's
// experts. Reference: DESIGN.md, "stale gate" recall 80.7–88.6% on real models.
func TestLookaheadRecallFollowsCorrelation(t *testing.T) {
	recall := map[float64]float64{}
	for _, rho := range []float64{0.2, 0.9} {
		_, steps := record(t, rho, func(o *Options) { o.Tokens = 24 })
		recall[rho] = lookaheadRecall(steps, testShape(rho).TopK)
	}
	t.Logf("depth-1 lookahead recall: rho 0.2 → %.3f, rho 0.9 → %.3f (chance %.3f)", recall[0.2], recall[0.9], float64(testShape(0).TopK)/float64(testShape(0).Experts))
	if !(recall[0.9] > recall[0.2]+0.1) {
		t.Errorf("recall did not rise with router correlation: %v", recall)
	}
}

// lookaheadRecall is the fraction of layer i+1's selected experts found in the
// top-k of layer i's depth-1 lookahead scores, over decode steps.
func lookaheadRecall(steps []traces.Step, k int) float64 {
	hit, n := 0, 0
	for _, s := range steps {
		if s.Phase != traces.Decode {
			continue
		}
		for i := 0; i+1 < len(s.Layers); i++ {
			pred := refTopK(s.Layers[i].Lookahead[0], k)
			for _, e := range s.Layers[i+1].Experts {
				if slices.Contains(pred, e) {
					hit++
				}
				n++
			}
		}
	}
	return float64(hit) / float64(n)
}

func TestRecordErrors(t *testing.T) {
	dir := t.TempDir()
	good := synthModel(t, 0.7)
	notGGUF := filepath.Join(dir, "notes.gguf")
	os.WriteFile(notGGUF, []byte("this is not a model\n"), 0o644)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.gguf")
	os.WriteFile(truncated, data[:len(data)/2], 0o644)
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"missing", func(o *Options) { o.ModelPath = filepath.Join(dir, "nope.gguf") }, "no such file"},
		{"not gguf", func(o *Options) { o.ModelPath = notGGUF }, "GGUF"},
		{"truncated", func(o *Options) { o.ModelPath = truncated }, "truncated"},
		{"tokens", func(o *Options) { o.Tokens = 0 }, "tokens 0"},
		{"cancelled", nil, "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.ModelPath, o.Prompts, o.Tokens = good, testPrompts, 4
			o.Out = filepath.Join(t.TempDir(), "t.parquet")
			ctx := context.Background()
			if tc.edit != nil {
				tc.edit(&o)
			} else {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			_, err := Record(ctx, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Record: error %v, want one containing %q", err, tc.want)
			}
			if tc.name == "cancelled" && !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v does not wrap context.Canceled", err)
			}
			if _, err := os.Stat(o.Out); err == nil {
				t.Errorf("output %s left behind after an error", o.Out)
			}
			// Over an existing trace: the failed recording leaves it as it was.
			old := []byte("an older trace")
			if err := os.WriteFile(o.Out, old, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Record(ctx, o); err == nil {
				t.Fatal("second Record: no error")
			}
			if got, err := os.ReadFile(o.Out); err != nil || string(got) != string(old) {
				t.Errorf("existing output changed after an error: %q %v", got, err)
			}
			if ents, _ := os.ReadDir(filepath.Dir(o.Out)); len(ents) != 1 {
				t.Errorf("%d files beside the output, want only the old trace", len(ents))
			}
		})
	}
}

// refScores is W·x in float64 (W: experts × hidden, row-major).
func refScores(w, x []float32, experts, hidden int) []float32 {
	out := make([]float32, experts)
	for e := range experts {
		var s float64
		for j := range hidden {
			s += float64(w[e*hidden+j]) * float64(x[j])
		}
		out[e] = float32(s)
	}
	return out
}

// refTopK returns the indices of the k largest values, ties to the lower index.
func refTopK(xs []float32, k int) []int32 {
	idx := make([]int32, len(xs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int {
		switch {
		case xs[a] > xs[b]:
			return -1
		case xs[a] < xs[b]:
			return 1
		}
		return 0
	})
	return idx[:k]
}

// refWeights is qwen3moe's gating: softmax over all logits, take the selected
// probabilities, normalize them to sum 1.
func refWeights(logits []float32, sel []int32) []float32 {
	mx := slices.Max(logits)
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l - mx))
	}
	out := make([]float32, len(sel))
	var sum float64
	for i, e := range sel {
		p := math.Exp(float64(logits[e]-mx)) / z
		out[i] = float32(p)
		sum += p
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / sum)
	}
	return out
}

// relErr is max|a−b| / max(max|b|, 1e-6).
func relErr(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, 1e-6)
}

// TestRecordLongPrompt: a prompt longer than one prefill pass is prefilled in
// 256-token passes with contiguous positions, and decoding continues after it.
func TestRecordLongPrompt(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet, 12345; ", 12)
	sum, steps := record(t, 0.7, func(o *Options) { o.Prompts, o.Tokens = []string{long}, 3 })
	n := sum.PrefillTokens
	if n <= prefillChunk {
		t.Fatalf("prompt has only %d tokens; the test needs more than %d", n, prefillChunk)
	}
	passes := map[int32]int{}
	for k, s := range steps {
		if int(s.Pos) != k {
			t.Fatalf("step %d has pos %d", k, s.Pos)
		}
		if s.Phase == traces.Prefill {
			passes[s.Pass]++
		}
	}
	if want := (n + prefillChunk - 1) / prefillChunk; len(passes) != want || passes[0] != prefillChunk {
		t.Errorf("prefill of %d tokens in passes %v, want %d passes of up to %d", n, passes, want, prefillChunk)
	}
	t.Logf("%d prompt tokens in %d prefill passes", n, len(passes))
	if len(steps) != n+3 {
		t.Errorf("%d steps, want %d", len(steps), n+3)
	}
}
