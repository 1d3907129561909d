package traces

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// ioBenchTrace is the size the brief names: 2,000 tokens of a 40-layer,
// 256-expert, top-8 model with depth-1 lookahead scores (80,000 rows).
func ioBenchTrace(b *testing.B) (Meta, []Step, []byte) {
	b.Helper()
	m := ioTestMeta(ioShape{layers: 40, experts: 256, topK: 8, hidden: 2048, depth: 1})
	steps := ioTestSteps(rand.New(rand.NewPCG(12, 12)), m, 2000, false)
	return m, steps, ioWrite(b, m, steps, 0)
}

// BenchmarkRead streams the whole trace through Reader; rows/s counts
// Parquet rows (token × MoE layer).
func BenchmarkRead(b *testing.B) {
	_, steps, data := ioBenchTrace(b)
	rows := float64(len(steps) * 40)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench.parquet")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if err := r.Err(); err != nil || n != len(steps) {
			b.Fatalf("%d steps, err %v", n, err)
		}
		r.Close()
	}
	b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWrite writes the same trace; rows/s as for BenchmarkRead.
func BenchmarkWrite(b *testing.B) {
	m, steps, data := ioBenchTrace(b)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		var buf bytes.Buffer
		buf.Grow(len(data))
		w, err := NewWriter(&buf, m)
		if err != nil {
			b.Fatal(err)
		}
		for i := range steps {
			if err := w.Write(&steps[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(steps)*40)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadColumns reads a trace with logits, router inputs and depth-1
// lookahead (40 layers, 256 experts, top-8, hidden 2048; 500 tokens) with
// every column and with only what lru needs; compare B/op.
func BenchmarkReadColumns(b *testing.B) {
	m := ioTestMeta(ioShape{layers: 40, experts: 256, topK: 8, hidden: 2048, depth: 1, logits: true, routerInputs: true})
	steps := ioTestSteps(rand.New(rand.NewPCG(12, 12)), m, 500, false)
	data := ioWrite(b, m, steps, 0)
	for _, c := range []struct {
		name string
		cols Columns
	}{
		{"all", Columns{}},
		{"experts-only", Columns{NoLogits: true, NoRouterInputs: true, NoLookahead: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := NewReaderColumns(bytes.NewReader(data), "bench.parquet", c.cols)
				if err != nil {
					b.Fatal(err)
				}
				got, err := ReadAll(r)
				if err != nil || len(got) != len(steps) {
					b.Fatalf("%d steps, err %v", len(got), err)
				}
				r.Close()
			}
		})
	}
}
