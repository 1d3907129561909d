package gguf

import (
	"io"
	"testing"
)

// BenchmarkSynthQ8 streams a 4-layer, 64-expert, hidden-1024 Q8_0 model (about
// 440 MB) to io.Discard: generation plus quantization throughput.
func BenchmarkSynthQ8(b *testing.B) {
	o := DefaultSynthOptions()
	o.Layers = 4
	w, err := NewSynthWriter(o)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		n, err := w.WriteTo(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

func BenchmarkAppendQ8_0(b *testing.B) {
	xs := make([]float32, 1<<16)
	uniform(newTestRand(), xs, 0.03)
	buf := make([]byte, 0, len(xs)/32*34)
	b.SetBytes(int64(len(xs)) * 4)
	for b.Loop() {
		buf, _ = AppendQ8_0(buf[:0], xs)
	}
}

func BenchmarkUniform(b *testing.B) {
	xs := make([]float32, 1<<16)
	r := newTestRand()
	b.SetBytes(int64(len(xs)) * 4)
	for b.Loop() {
		uniform(r, xs, 0.03)
	}
}
