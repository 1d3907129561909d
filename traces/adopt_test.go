package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
)

// TestAdoptModel: a trace's own spec (expert and dense bytes per layer) is
// replaced by a built-in model that agrees on every fact, keeping the run's
// top-k; a model that disagrees is refused with every difference.
func TestAdoptModel(t *testing.T) {
	m, err := devices.LookupModel(devices.Qwen3_30BA3B, "")
	if err != nil {
		t.Fatal(err)
	}
	meta := Meta{Model: devices.ModelSpec{Name: "Qwen3-30B-A3B-Q4_K_M", Arch: m.Arch, Experts: m.Experts, TopK: 6, Source: "route trace"}}
	for _, l := range m.Layers {
		meta.Model.Layers = append(meta.Model.Layers, devices.LayerSpec{Block: l.Block, ExpertBytes: l.ExpertBytes, DenseBytes: l.DenseBytes,
			Tensors: []devices.ExpertTensor{{Name: "expert", Bytes: l.ExpertBytes}}})
	}
	bad := meta
	bad.Model.Layers = append([]devices.LayerSpec(nil), meta.Model.Layers...)
	bad.Model.Layers[3].ExpertBytes++
	bad.Model.Layers[7].DenseBytes = 5
	bad.Model.Arch = "gptoss"
	err = AdoptModel(&bad, m)
	for _, want := range []string{"architecture", "layer 3: expert bytes", "layer 7: dense bytes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mismatch error %v, want it to name %q", err, want)
		}
	}
	if bad.Model.Hidden != 0 {
		t.Error("a refused adoption changed the trace's model")
	}
	if err := AdoptModel(&meta, m); err != nil {
		t.Fatal(err)
	}
	got := meta.Model
	if got.Name != m.Name || got.TopK != 6 || got.Hidden != m.Hidden || got.ExpertFFN != m.ExpertFFN ||
		len(got.Layers[0].Tensors) != 3 || got.Layers[0].ExpertFLOPsPerToken != m.Layers[0].ExpertFLOPsPerToken ||
		!strings.Contains(meta.Info["model_adopted"], m.Name) {
		t.Errorf("adopted model %+v, info %v", got, meta.Info)
	}
	// The adopted experts can be re-quantized (what a route trace alone cannot).
	if _, err := got.WithExpertQuant("Q3_K"); err != nil {
		t.Errorf("re-quantizing the adopted model: %v", err)
	}
}

// TestAdoptModelReference: the published Qwen3-30B-A3B route trace agrees
// with the built-in qwen3-30b-a3b spec on every layer's expert and dense bytes.
func TestAdoptModelReference(t *testing.T) {
	path := filepath.Join(tsReferenceDir(), "traces", "qwen.route.csv")
	if _, err := os.Stat(path); err != nil {
		t.Skip("reference trace absent")
	}
	meta, _, err := ImportBMoE(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := devices.LookupModel(devices.Qwen3_30BA3B, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := AdoptModel(&meta, m); err != nil {
		t.Fatal(err)
	}
	if meta.Model.TopK != 6 {
		t.Errorf("top-k %d, want the run's 6", meta.Model.TopK)
	}
}
