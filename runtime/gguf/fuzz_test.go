package gguf

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse and, when they parse, to every consumer of
// a File. Nothing may panic, and allocations stay proportional to the input: every
// count and length is checked against the bytes left before allocating.
func FuzzParse(f *testing.F) {
	// The smallest synthetic model (about 35 KB): large seeds make the fuzzer spend
	// its time minimizing.
	f.Add(synthBytes(f, SynthOptions{Arch: "qwen3moe", Layers: 1, Experts: 2, TopK: 1, Hidden: 32, ExpertFFN: 32,
		Heads: 1, HeadsKV: 1, HeadDim: 32, Context: 64, Vocab: minVocab, Quant: "q8_0", Seed: 1}))
	small := NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{{"general.architecture", "olmoe"}, {"olmoe.expert_count", uint32(2)}, {"olmoe.expert_used_count", uint32(1)},
		{"nested", Array{TypeArray, []Array{{TypeString, []string{"a"}}}}}, {"b", true}, {"f", 1.5}} {
		if err := small.AddKV(kv.k, kv.v); err != nil {
			f.Fatal(err)
		}
	}
	if err := small.AddTensor("blk.0.ffn_up_exps.weight", TypeF16, []int64{2, 1, 2}, make([]byte, 8)); err != nil {
		f.Fatal(err)
	}
	if err := small.AddTensor("blk.0.ffn_gate_inp.weight", TypeF32, []int64{2, 2}, make([]byte, 16)); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := small.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.gguf"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := parseBytes(data, "fuzz.gguf")
		if err != nil {
			return
		}
		for _, ti := range g.Tensors {
			if ti.End() > int64(len(data)) {
				t.Fatalf("tensor %s ends at %d beyond %d", ti.Name, ti.End(), len(data))
			}
			if _, err := g.ReadTensorBytes(ti.Name); err != nil {
				t.Fatalf("ReadTensorBytes(%s): %v", ti.Name, err)
			}
			if ggmlTypes[ti.Type].Dequantizable {
				if _, err := g.ReadTensorF32(ti.Name); err != nil {
					t.Fatalf("ReadTensorF32(%s): %v", ti.Name, err)
				}
			}
		}
		_, _ = g.MoE()
		_, _ = g.ModelSpec()
		if err := g.WriteInspect(io.Discard, 4); err != nil {
			t.Fatal(err)
		}
		if err := g.WriteInspectJSON(io.Discard, 4); err != nil {
			t.Fatal(err)
		}
	})
}
