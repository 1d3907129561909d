//go:build llamacpp

package llama

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/lessim/lessim/runtime/gguf"
)

var (
	tinyOnce sync.Once
	tinyPath string
	tinyErr  error
)

// tinyModel writes a 4-block, 8-expert, top-2 synthetic qwen3moe model once per
// test binary.
func tinyModel(t *testing.T) string {
	t.Helper()
	tinyOnce.Do(func() {
		dir, err := mkdirTemp()
		if err != nil {
			tinyErr = err
			return
		}
		o := gguf.DefaultSynthOptions()
		o.Layers, o.Experts, o.TopK, o.Hidden, o.ExpertFFN, o.Vocab = 4, 8, 2, 128, 64, 512
		tinyPath = filepath.Join(dir, "tiny.gguf")
		tinyErr = gguf.SynthMoE(tinyPath, o)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyPath
}

func load(t *testing.T) *Model {
	t.Helper()
	m, err := Load(tinyModel(t), ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestLoadInfo(t *testing.T) {
	m := load(t)
	got := m.Info()
	want := ModelInfo{Arch: "qwen3moe", Blocks: 4, Embd: 128, Vocab: 512, Experts: 8, ExpertsUsed: 2}
	got.Params, got.SizeBytes = 0, 0
	if got != want {
		t.Fatalf("Info() = %+v, want %+v", got, want)
	}
	if SystemInfo() == "" {
		t.Error("SystemInfo() is empty")
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "missing.gguf"), ModelOptions{}); err == nil {
		t.Error("Load(missing) succeeded")
	}
}

func TestTokenizeRoundTrip(t *testing.T) {
	m := load(t)
	for _, text := range []string{"hello world", "func f() { return 42 }", "é ü 你好", ""} {
		toks, err := m.Tokenize(text, false)
		if err != nil {
			t.Fatalf("Tokenize(%q): %v", text, err)
		}
		var s string
		for _, tok := range toks {
			p, err := m.TokenToPiece(tok)
			if err != nil {
				t.Fatal(err)
			}
			s += p
		}
		// SentencePiece-style tokenizers prefix a space to the text.
		if s != text && s != " "+text {
			t.Errorf("pieces of Tokenize(%q) = %q", text, s)
		}
	}
	if _, err := m.TokenToPiece(-1); err == nil {
		t.Error("TokenToPiece(-1) succeeded")
	}
}

// generate prefills prompt and samples n tokens, returning them.
func generate(t *testing.T, c *Context, prompt []int32, n int, so SamplerOptions, all bool) []int32 {
	t.Helper()
	s, err := NewSampler(so)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.Reset()
	dec := c.Decode
	if all {
		dec = c.DecodeAll
	}
	if err := dec(prompt); err != nil {
		t.Fatal(err)
	}
	var out []int32
	for range n {
		tok := s.Sample(c)
		out = append(out, tok)
		if err := c.Decode([]int32{tok}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func newCtx(t *testing.T, m *Model, o ContextOptions) *Context {
	t.Helper()
	c, err := m.NewContext(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCaptureDoesNotChangeTokens(t *testing.T) {
	m := load(t)
	prompt, err := m.Tokenize("The quick brown fox jumps over the lazy dog", true)
	if err != nil {
		t.Fatal(err)
	}
	plain := newCtx(t, m, ContextOptions{Ctx: 128})
	capt := newCtx(t, m, ContextOptions{Ctx: 128, Capture: &CaptureOptions{RouterInputs: true}})
	for _, so := range []SamplerOptions{{}, {Temperature: 0.8, TopK: 40, Seed: 7}} {
		a := generate(t, plain, prompt, 24, so, true)
		b := generate(t, capt, prompt, 24, so, true)
		if !slices.Equal(a, b) {
			t.Errorf("%+v: tokens differ with capture:\n%v\n%v", so, a, b)
		}
		c := generate(t, plain, prompt, 24, so, true)
		if !slices.Equal(a, c) {
			t.Errorf("%+v: same seed, different tokens:\n%v\n%v", so, a, c)
		}
	}
	if capt.CapturedTensors() == 0 {
		t.Error("capture copied nothing")
	}
}

func TestCaptureShapes(t *testing.T) {
	m := load(t)
	c := newCtx(t, m, ContextOptions{Ctx: 64, Capture: &CaptureOptions{RouterInputs: true}})
	prompt, _ := m.Tokenize("one two three four five", true)
	for _, step := range []struct {
		name string
		toks []int32
		all  bool
	}{{"prefill-all", prompt, true}, {"decode", []int32{prompt[1]}, false}} {
		dec := c.Decode
		if step.all {
			dec = c.DecodeAll
		}
		if err := dec(step.toks); err != nil {
			t.Fatal(err)
		}
		n := len(step.toks)
		for b := range 4 {
			lc, ok := c.Captured(b)
			if !ok {
				t.Fatalf("%s: block %d not captured", step.name, b)
			}
			if lc.Rows != n || len(lc.Logits) != n*8 || len(lc.TopK) != n*2 || len(lc.Weights) != n*2 || len(lc.Input) != n*128 {
				t.Fatalf("%s: block %d: rows %d logits %d topk %d weights %d input %d", step.name, b,
					lc.Rows, len(lc.Logits), len(lc.TopK), len(lc.Weights), len(lc.Input))
			}
			for r := range n {
				top := lc.TopK[r*2 : r*2+2]
				logits := lc.Logits[r*8 : r*8+8]
				if want := topK(logits, 2); !slices.Equal(top, want) {
					t.Errorf("%s: block %d row %d: topk %v, top-2 of logits %v", step.name, b, r, top, want)
				}
				w := lc.Weights[r*2 : r*2+2]
				if s := w[0] + w[1]; math.Abs(float64(s)-1) > 1e-5 || w[0] < w[1] {
					t.Errorf("%s: block %d row %d: weights %v not normalized and ordered", step.name, b, r, w)
				}
			}
			if c.PassCPUNS() <= 0 {
				t.Errorf("%s: PassCPUNS %d, want > 0", step.name, c.PassCPUNS())
			}
			if step.name == "decode" && (lc.ReadyNS <= 0 || lc.ReadyNS > c.PassNS()) {
				t.Errorf("block %d ReadyNS %d outside the pass (%d ns)", b, lc.ReadyNS, c.PassNS())
			}
		}
	}
	// Decode (last row only) still captures every prompt row before the last block.
	c.Reset()
	if err := c.Decode(prompt); err != nil {
		t.Fatal(err)
	}
	first, _ := c.Captured(0)
	last, _ := c.Captured(3)
	if first.Rows != len(prompt) || last.Rows != 1 {
		t.Errorf("Decode: first block %d rows, last block %d rows; want %d and 1", first.Rows, last.Rows, len(prompt))
	}
}

func TestHook(t *testing.T) {
	m := load(t)
	var events []string
	var c *Context
	hook := func(kind HookKind, block int) {
		lc, ok := c.Captured(block)
		switch {
		case kind == HookRouter && ok && len(lc.TopK) == 0:
			events = append(events, "router")
		case kind == HookTopK && ok && len(lc.TopK) > 0:
			events = append(events, "topk")
		default:
			events = append(events, "bad")
		}
	}
	c = newCtx(t, m, ContextOptions{Ctx: 32, Capture: &CaptureOptions{Hook: hook}})
	if err := c.Decode([]int32{10}); err != nil {
		t.Fatal(err)
	}
	want := slices.Repeat([]string{"router", "topk"}, 4)
	if !slices.Equal(events, want) {
		t.Errorf("hook events %v, want %v", events, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	m := load(t)
	c := newCtx(t, m, ContextOptions{Ctx: 8, Batch: 4})
	for _, tc := range []struct {
		name string
		toks []int32
	}{{"empty", nil}, {"too many", []int32{1, 2, 3, 4, 5}}, {"bad token", []int32{1, 9999}}} {
		if err := c.Decode(tc.toks); err == nil {
			t.Errorf("%s: Decode succeeded", tc.name)
		}
	}
	for range 2 {
		if err := c.Decode([]int32{1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Decode([]int32{1}); err == nil {
		t.Error("Decode past the context succeeded")
	}
	if _, err := m.NewContext(ContextOptions{Ctx: 8, Batch: 16, Threads: -1}); err == nil {
		t.Error("NewContext with bad options succeeded")
	}
	if _, err := NewSampler(SamplerOptions{Temperature: -1}); err == nil {
		t.Error("NewSampler(-1) succeeded")
	}
}

// topK is the reference selection: indices of the k largest values, ties to the lower index.
func topK(xs []float32, k int) []int32 {
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

func mkdirTemp() (string, error) { return os.MkdirTemp("", "lessim-llama-test") }
