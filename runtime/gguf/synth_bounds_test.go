package gguf

import (
	"math"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// TestSynthValidateBounds sets each option of the default model, one at a
// time, to zero, a negative and an absurd value: Validate must name it.
// (Validate sees the value as given; only EnsureDefaults maps 0 to a default.)
func TestSynthValidateBounds(t *testing.T) {
	ints := map[string]func(*SynthOptions) *int{
		"layers": func(o *SynthOptions) *int { return &o.Layers }, "experts": func(o *SynthOptions) *int { return &o.Experts },
		"top-k": func(o *SynthOptions) *int { return &o.TopK }, "hidden": func(o *SynthOptions) *int { return &o.Hidden },
		"expert-ffn": func(o *SynthOptions) *int { return &o.ExpertFFN }, "heads": func(o *SynthOptions) *int { return &o.Heads },
		"heads-kv": func(o *SynthOptions) *int { return &o.HeadsKV }, "head-dim": func(o *SynthOptions) *int { return &o.HeadDim },
		"context": func(o *SynthOptions) *int { return &o.Context }, "vocab": func(o *SynthOptions) *int { return &o.Vocab },
	}
	if err := DefaultSynthOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, field := range ints {
		for _, v := range []int{0, -1, math.MinInt, math.MaxInt, 1 << 40} {
			o := DefaultSynthOptions()
			*field(&o) = v
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s = %d: error %v, want one naming %s", name, v, err, name)
			}
		}
	}
	floats := map[string]func(*SynthOptions) *float64{
		"router-correlation": func(o *SynthOptions) *float64 { return &o.RouterCorrelation },
		"attention-scale":    func(o *SynthOptions) *float64 { return &o.AttentionScale },
		"attention-sharing":  func(o *SynthOptions) *float64 { return &o.AttentionSharing },
	}
	for name, field := range floats {
		for _, v := range []float64{-0.01, math.NaN(), math.Inf(1), math.Inf(-1), 1e300} {
			o := DefaultSynthOptions()
			*field(&o) = v
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s = %v: error %v, want one naming %s", name, v, err, name)
			}
		}
	}
	// Each size within its cap, the product absurd: about 64 TiB of experts.
	o := DefaultSynthOptions()
	o.Layers, o.Experts, o.Hidden, o.ExpertFFN = 1024, 1024, 8192, 8192
	errgolden.Check(t, "gib", o.Validate())
}

// TestWriterProgress: the progress callback sees growing byte counts that
// end at the file size, and DataSize is all of the file but its header.
func TestWriterProgress(t *testing.T) {
	w, err := NewSynthWriter(tinyOptions())
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64
	w.SetProgress(func(n int64) { seen = append(seen, n) })
	var buf countBuf
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || seen[len(seen)-1] != n || n != buf.n {
		t.Fatalf("progress %v, file %d bytes", seen, n)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("progress went back: %v", seen)
		}
	}
	if d := w.DataSize(); d <= 0 || d >= n || n-d > 1<<20 {
		t.Errorf("DataSize %d of a %d-byte file", d, n)
	}
}

type countBuf struct{ n int64 }

func (c *countBuf) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
