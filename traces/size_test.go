package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/devices"
)

// TestEstimateSize: the size EstimateSize measures on the first SizeSample
// steps is within 3% of the file Create writes, for three shapes: the
// 40-layer, 256-expert, top-8 default with depth-1 lookahead stored
// compactly (which must stay under 4 KB per token, the target of the issue
// that asked for compact lookahead) and stored as full vectors; and a
// 48-layer, 128-expert model with logits, depth-2 lookahead, a prompt and
// two sequences. Lengths are a few times the sample, to keep the test fast.
// The file is written from the source EstimateSize hands back, which must
// give the same bytes as a fresh source.
func TestEstimateSize(t *testing.T) {
	const within = 0.03
	for _, tc := range []struct {
		name  string
		model string
		top   int
		mod   func(*SynthOptions)
	}{
		{"compact", "minicpm-v-4.7-35b-a3b", 8, func(o *SynthOptions) { o.Tokens = 1500 }},
		{"full", "minicpm-v-4.7-35b-a3b", 0, func(o *SynthOptions) { o.Tokens = 800 }},
		{"logits-prefill", "qwen3-30b-a3b", 0, func(o *SynthOptions) {
			o.Tokens, o.PromptTokens, o.Sequences, o.LookaheadDepth, o.Logits = 250, 60, 2, 2, true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := devices.LookupModel(tc.model, "")
			if err != nil {
				t.Fatal(err)
			}
			o := DefaultSynthOptions()
			tc.mod(&o)
			steps := int64(o.Sequences) * int64(o.Tokens+o.PromptTokens)
			meta, sample, err := SynthSource(m, o)
			if err != nil {
				t.Fatal(err)
			}
			meta.LookaheadTop = tc.top
			est, rest, err := EstimateSize(meta, sample, steps)
			if err != nil {
				t.Fatal(err)
			}
			if est.Sampled != SizeSample || est.Steps != steps {
				t.Fatalf("sampled %d of %d steps, want %d of %d", est.Sampled, est.Steps, SizeSample, steps)
			}
			size := synthFileSize(t, meta, m, o, rest)
			ratio := float64(est.Bytes()) / float64(size)
			t.Logf("estimate %d bytes (%d fixed + %.1f per step), file %d bytes: ratio %.4f", est.Bytes(), est.Fixed, est.PerStep, size, ratio)
			if ratio < 1-within || ratio > 1+within {
				t.Errorf("estimate %d bytes is %.4f × the file's %d, want within %v", est.Bytes(), ratio, size, within)
			}
			if tc.name == "compact" && float64(size)/float64(steps) >= 4000 {
				t.Errorf("compact trace: %d bytes per token, want under 4 KB", size/steps)
			}
		})
	}
}

// TestEstimateSizeShort: a trace shorter than the sample is measured whole,
// so the estimate is its exact size; one of no steps is the fixed part.
func TestEstimateSizeShort(t *testing.T) {
	m := tsSpec(3, 16, 2)
	o := DefaultSynthOptions()
	o.Tokens = 40
	meta, sample, err := SynthSource(m, o)
	if err != nil {
		t.Fatal(err)
	}
	est, rest, err := EstimateSize(meta, sample, 40)
	if err != nil {
		t.Fatal(err)
	}
	if size := synthFileSize(t, meta, m, o, rest); est.Sampled != 40 || est.Bytes() != size {
		t.Errorf("estimate %d bytes over %d steps, file %d bytes", est.Bytes(), est.Sampled, size)
	}
	zero, _, err := EstimateSize(meta, NewSliceSource(nil), 1e9)
	if err != nil || zero.Bytes() != zero.Fixed || zero.Sampled != 0 {
		t.Errorf("empty sample: %+v, %v", zero, err)
	}
}

// synthFileSize writes the trace of src's steps under meta to a file and
// returns its size, failing unless the file is byte for byte the one
// written from a fresh source of the synthetic trace of m and o.
func synthFileSize(t *testing.T, meta Meta, m *devices.ModelSpec, o SynthOptions, src Source) int64 {
	t.Helper()
	_, fresh, err := SynthSource(m, o)
	if err != nil {
		t.Fatal(err)
	}
	got, want := traceBytes(t, meta, src), traceBytes(t, meta, fresh)
	if !bytes.Equal(got, want) {
		t.Fatalf("the file from EstimateSize's source (%d bytes) differs from one from a fresh source (%d bytes)", len(got), len(want))
	}
	return int64(len(got))
}

// traceBytes writes meta and src's steps as a trace file and returns it.
func traceBytes(t *testing.T, meta Meta, src Source) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := WriteFile(path, meta, src); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEstimateSizeSliceRest: a slice source is measured without copies and
// handed back wound to where it was, so it yields every step not yet read.
func TestEstimateSizeSliceRest(t *testing.T) {
	m := tsSpec(3, 16, 2)
	o := DefaultSynthOptions()
	o.Tokens = 300
	meta, steps, err := Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	src := NewSliceSource(steps)
	src.Next()
	est, rest, err := EstimateSize(meta, src, int64(len(steps)-1))
	if err != nil || est.Sampled != SizeSample {
		t.Fatalf("sampled %d, err %v", est.Sampled, err)
	}
	got, want := traceBytes(t, meta, rest), traceBytes(t, meta, NewSliceSource(steps[1:]))
	if !bytes.Equal(got, want) {
		t.Errorf("the slice source handed back yields other steps than steps[1:]")
	}
}
