package gguf

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// tinyOptions is a 2-layer, 8-expert, hidden-64 qwen3moe: about 150 KB in Q8_0.
func tinyOptions() SynthOptions {
	return SynthOptions{Arch: "qwen3moe", Layers: 2, Experts: 8, TopK: 2, Hidden: 64, ExpertFFN: 32, Heads: 4, HeadsKV: 2,
		HeadDim: 16, Context: 256, Vocab: minVocab, Quant: "q8_0", RouterCorrelation: 0.7, AttentionScale: 1, Seed: 42}
}

// synthBytes returns the file SynthMoE would write for o.
func synthBytes(t testing.TB, o SynthOptions) []byte {
	t.Helper()
	w, err := NewSynthWriter(o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeTemp writes data to a file in a test directory and returns its path.
func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseBytes parses an in-memory file.
func parseBytes(data []byte, name string) (*File, error) {
	return Parse(bytes.NewReader(data), int64(len(data)), name)
}

func newTestRand() *rand.Rand { return rand.New(rand.NewPCG(1, 1)) }
