package traces

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestCompactLookahead writes steps with full lookahead vectors under
// Meta.LookaheadTop and reads back, as LookaheadIndex, exactly what
// IndexLookahead computes from the full vectors (with sums), everything else
// unchanged; Lookahead holds an empty vector per present depth, nil per
// absent one.
func TestCompactLookahead(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 5, experts: 32, topK: 4, hidden: 8, depth: 2})
	steps := ioTestSteps(rand.New(rand.NewPCG(7, 8)), m, 90, true)
	cm := m
	cm.LookaheadTop = 6
	data := ioWrite(t, cm, steps, 0)
	want := make([]Step, len(steps))
	for i := range steps {
		want[i] = CloneStep(&steps[i])
	}
	IndexLookahead(want, 6, true)
	r, err := NewReader(bytes.NewReader(data), "compact.parquet")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta().LookaheadTop != 6 {
		t.Fatalf("meta lookahead_top %d", r.Meta().LookaheadTop)
	}
	indexed := 0
	for i := range want {
		for l := range want[i].Layers {
			g, w := &got[i].Layers[l], &want[i].Layers[l]
			if len(g.Lookahead) != len(w.Lookahead) {
				t.Fatalf("step %d layer %d: %d lookahead depths, want %d", i, l, len(g.Lookahead), len(w.Lookahead))
			}
			for d := range g.Lookahead {
				if (g.Lookahead[d] == nil) != (w.Lookahead[d] == nil) || len(g.Lookahead[d]) != 0 {
					t.Fatalf("step %d layer %d depth %d: want an empty vector (nil where absent)", i, l, d+1)
				}
				if w.Lookahead[d] == nil {
					w.LookaheadIndex[d] = CandidateIndex{}
				}
			}
			if !reflect.DeepEqual(g.LookaheadIndex, w.LookaheadIndex) {
				t.Fatalf("step %d layer %d: index %+v, want %+v", i, l, g.LookaheadIndex, w.LookaheadIndex)
			}
			indexed += len(g.LookaheadIndex)
			g.Lookahead, g.LookaheadIndex = w.Lookahead, w.LookaheadIndex
		}
	}
	if indexed == 0 {
		t.Fatal("nothing indexed")
	}
	if d := ioDiff(got, steps); d != "" {
		t.Error(d)
	}
	// A projection without lookahead reads a compact file too.
	r, err = NewReaderColumns(bytes.NewReader(data), "compact.parquet", Columns{NoLookahead: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err = ReadAll(r)
	if err != nil || got[20].Layers[0].LookaheadIndex != nil || got[20].Layers[0].Lookahead != nil {
		t.Errorf("projected compact read: err %v, lookahead %v", err, got[20].Layers[0].Lookahead)
	}
}

// BenchmarkCompactFileSize writes 500 tokens of the 40-layer, 256-expert,
// top-8 shape with depth-1 lookahead stored full and compactly (top 8 and 16
// candidates) and reports the file's bytes per token.
func BenchmarkCompactFileSize(b *testing.B) {
	m := ioTestMeta(ioShape{layers: 40, experts: 256, topK: 8, hidden: 2048, depth: 1})
	steps := ioTestSteps(rand.New(rand.NewPCG(12, 12)), m, 500, false)
	for _, top := range []int{0, 8, 16} {
		b.Run(map[int]string{0: "full", 8: "top8", 16: "top16"}[top], func(b *testing.B) {
			cm := m
			cm.LookaheadTop = top
			var n int
			for b.Loop() {
				n = len(ioWrite(b, cm, steps, 0))
			}
			b.ReportMetric(float64(n)/float64(len(steps)), "B/token")
		})
	}
}

// TestCompactStats: ComputeStats measures the same lookahead recall on a
// compact trace (from its stored candidates) as on the full one.
func TestCompactStats(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 6, experts: 32, topK: 4, hidden: 8, depth: 2})
	steps := ioTestSteps(rand.New(rand.NewPCG(9, 9)), m, 120, false)
	cm := m
	cm.LookaheadTop = 4
	var got [2]*Stats
	for i, meta := range []Meta{m, cm} {
		r, err := NewReader(bytes.NewReader(ioWrite(t, meta, steps, 0)), "s.parquet")
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = ComputeStats(r.Meta(), r, StatsOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got[0].Lookahead) != 2 || !reflect.DeepEqual(got[0].Lookahead, got[1].Lookahead) {
		t.Errorf("lookahead recall full %+v, compact %+v", got[0].Lookahead, got[1].Lookahead)
	}
}
