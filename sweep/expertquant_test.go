package sweep

import (
	"testing"

	"github.com/lessim/lessim/reports"
)

// TestExpertQuantAxis: expert_quant is a sweep axis like any spec field
// ("" keeps the model's types), its column holds each point's value, and
// smaller expert types move fewer flash bytes over the same routing.
func TestExpertQuantAxis(t *testing.T) {
	const grid = `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 24}}
  device: {name: iphone-17-pro-max}
  policy: {name: lru}
  cache: {size: 1GiB}
axes:
  expert_quant: ["", Q4_K, Q3_K, Q2_K]
`
	_, pts := mustExpand(t, grid)
	if len(pts) != 4 || pts[0].Spec.ExpertQuant != "" || pts[3].Spec.ExpertQuant != "Q2_K" {
		t.Fatalf("points %+v", pts)
	}
	out := t.TempDir()
	if sum := runGrid(t, grid, out, Options{Workers: 2}); sum.Failed != 0 || sum.Ran != 4 {
		t.Fatalf("summary %+v", sum)
	}
	tb, err := reports.ReadResults(out)
	if err != nil {
		t.Fatal(err)
	}
	flash := map[string]float64{}
	for i := range tb.Len() {
		if e := tb.Str("error", i); e != "" {
			t.Fatalf("row %d: %s", i, e)
		}
		f, _ := tb.Num("flash_bytes_per_token", i)
		flash[tb.Str("spec.expert_quant", i)] = f
	}
	if len(flash) != 4 || !(flash[""] > flash["Q4_K"] && flash["Q4_K"] > flash["Q3_K"] && flash["Q3_K"] > flash["Q2_K"]) {
		t.Errorf("flash bytes per token by expert_quant: %v", flash)
	}
}
