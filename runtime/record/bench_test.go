//go:build llamacpp

package record

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/llama"
)

// BenchmarkRecord measures the recorder's cost on DESIGN.md's 16-layer,
// 64-expert, top-8, hidden-1024 synthetic qwen3moe model (Q8_0, about 1.7 GB,
// generated once into a temp dir), 1 thread, in two parts:
//
// Times are CPU times (the machine's 2 cores are shared, so wall clock is
// mostly other processes' noise): the compute thread's CPU time per pass and
// the process's CPU time for the recorder's Go-side work.
//
//   - the forward passes: two contexts on one model, one plain (no eval
//     callback) and one capturing (router inputs on, as lookahead needs),
//     decode the same tokens alternately, token by token and swapping which
//     goes first, so machine noise (2 shared cores) hits both alike;
//   - the Go-side work per decode token of a real Record (sampling, copying
//     the capture, lookahead scores, Parquet writing), measured once before
//     the loop as Summary.DecodeProcCPUNS − DecodeCPUNS.
//
// Metrics: plain-tok/s (passes + sampling), record-tok/s (capturing passes +
// the recorder's Go-side work), overhead = plain/record speed − 1 (target
// ≤ 0.15), pass-overhead (the eval callback alone; pass-wall-overhead is the
// same in wall-clock time), go-ms/tok.
func BenchmarkRecord(b *testing.B) {
	const tokens = 32
	path := bigModel(b)
	prompt := "The quick brown fox jumps over the lazy dog, and then"

	opt := DefaultOptions()
	opt.ModelPath, opt.Prompts, opt.Tokens = path, []string{prompt}, tokens
	opt.Out = filepath.Join(b.TempDir(), "bench.parquet")
	sum, err := Record(context.Background(), opt)
	if err != nil {
		b.Fatal(err)
	}
	goPerTok := float64(sum.DecodeProcCPUNS-sum.DecodeCPUNS) / float64(sum.DecodeTokens)

	m, err := llama.Load(path, llama.ModelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ptoks, err := m.Tokenize(prompt, true)
	if err != nil {
		b.Fatal(err)
	}
	ctxOpt := llama.ContextOptions{Ctx: len(ptoks) + tokens, Batch: len(ptoks)}
	plain, err := m.NewContext(ctxOpt)
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	ctxOpt.Capture = &llama.CaptureOptions{RouterInputs: true}
	capt, err := m.NewContext(ctxOpt)
	if err != nil {
		b.Fatal(err)
	}
	defer capt.Close()
	gen := sum.Generated[0]

	var plainPass, captPass, plainWall, captWall, sampleNS int64
	for b.Loop() {
		s, err := llama.NewSampler(llama.SamplerOptions{Temperature: opt.Temperature, TopK: opt.TopK, Seed: opt.Seed})
		if err != nil {
			b.Fatal(err)
		}
		plain.Reset()
		capt.Reset()
		if err := firstErr(plain.DecodeAll(ptoks), capt.DecodeAll(ptoks)); err != nil {
			b.Fatal(err)
		}
		for k, tok := range gen {
			t0 := time.Now()
			s.Sample(plain)
			sampleNS += time.Since(t0).Nanoseconds()
			// NB: alternate which context goes first, so cache warmth from the
			// previous pass favours neither.
			first, second := plain, capt
			if k%2 == 1 {
				first, second = capt, plain
			}
			if err := firstErr(first.Decode([]int32{tok}), second.Decode([]int32{tok})); err != nil {
				b.Fatal(err)
			}
			plainPass += plain.PassCPUNS()
			captPass += capt.PassCPUNS()
			plainWall += plain.PassNS()
			captWall += capt.PassNS()
		}
		s.Close()
	}
	n := float64(b.N * len(gen))
	plainTok := (float64(plainPass) + float64(sampleNS)) / n
	recTok := float64(captPass)/n + goPerTok
	b.ReportMetric(1e9/plainTok, "plain-tok/s")
	b.ReportMetric(1e9/recTok, "record-tok/s")
	b.ReportMetric(recTok/plainTok-1, "overhead")
	b.ReportMetric(float64(captPass)/float64(plainPass)-1, "pass-overhead")
	b.ReportMetric(float64(captWall)/float64(plainWall)-1, "pass-wall-overhead")
	b.ReportMetric(goPerTok/1e6, "go-ms/tok")
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// bigModel writes DESIGN.md's benchmark model once per test binary.
func bigModel(b *testing.B) string {
	b.Helper()
	modelMu.Lock()
	defer modelMu.Unlock()
	if p, ok := modelCache[-1]; ok {
		return p
	}
	if modelDir == "" {
		modelDir = mustTempDir(b)
	}
	p := filepath.Join(modelDir, "bench-16x64-top8-h1024.gguf")
	if err := gguf.SynthMoE(p, gguf.DefaultSynthOptions()); err != nil {
		b.Fatal(err)
	}
	modelCache[-1] = p
	return p
}
