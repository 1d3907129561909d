//go:build llamacpp && linux

package residency

import (
	"slices"
	"testing"

	"github.com/lessim/lessim/runtime/llama"
)

// fullyResident lists the experts of layer l whose every page is resident.
func fullyResident(t *testing.T, c *Controller, l int) []int32 {
	t.Helper()
	var out []int32
	for x := range c.Layout().Experts {
		f, err := c.Resident(Expert{l, x})
		if err != nil {
			t.Fatal(err)
		}
		if f == 1 {
			out = append(out, int32(x))
		}
	}
	return out
}

// TestWithLlamaCpp drives the real engine: the controller finds llama.cpp's own
// mapping, evicts every expert, and after one decoded token exactly the experts
// llama.cpp selected on each layer are resident (they were faulted in page by
// page, MADV_RANDOM). Then a HookTopK loads the selection through the lanes
// before the expert matmuls run, as the live driver does, and the next token's
// selection is resident again.
func TestWithLlamaCpp(t *testing.T) {
	o := smallOptions("qwen3moe")
	path, layout := synthModel(t, diskDir(t), o)
	m, err := llama.Load(path, llama.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var lanes *Lanes
	var c *Controller
	var ctx *llama.Context
	var hookErr error
	loadSelection := func(kind llama.HookKind, block int) {
		if lanes == nil || kind != llama.HookTopK || hookErr != nil {
			return
		}
		lc, _ := ctx.Captured(block)
		for _, x := range lc.TopK {
			if err := lanes.Submit(Job{ID: uint64(block*1000) + uint64(x), Expert: Expert{block, int(x)}, Demand: true}); err != nil {
				hookErr = err
				return
			}
		}
		for range lc.TopK {
			cpl, ok := lanes.Wait()
			if !ok || cpl.Err != nil {
				hookErr = cpl.Err
				return
			}
		}
	}
	ctx, err = m.NewContext(llama.ContextOptions{Ctx: 64, Capture: &llama.CaptureOptions{Hook: loadSelection}})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	toks, err := m.Tokenize("the expert cache", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Decode(toks); err != nil { // prefill: every expert comes in
		t.Fatal(err)
	}
	c, err = Open(path)
	if err != nil {
		t.Fatalf("llama.cpp's mapping: %v", err)
	}
	defer c.Close()
	if err := c.EvictAll(); err != nil {
		t.Fatal(err)
	}
	for l := range layout.Layers {
		if got := fullyResident(t, c, l); len(got) != 0 {
			t.Skipf("after EvictAll layer %d still has resident experts %v: this file system keeps pages", l, got)
		}
	}
	check := func(what string) {
		t.Helper()
		for l := range layout.Layers {
			lc, ok := ctx.Captured(layout.Layers[l].Block)
			if !ok {
				t.Fatalf("no capture of block %d", l)
			}
			want := slices.Clone(lc.TopK)
			slices.Sort(want)
			if got := fullyResident(t, c, l); !slices.Equal(got, want) {
				t.Errorf("%s: layer %d fully resident experts %v, want llama.cpp's selection %v", what, l, got, want)
			}
		}
	}
	if err := ctx.Decode([]int32{toks[len(toks)-1]}); err != nil {
		t.Fatal(err)
	}
	check("faulted in by llama.cpp")

	if err := c.EvictAll(); err != nil {
		t.Fatal(err)
	}
	lanes, err = NewLanes(2, layout.MaxRegion(), c.Load)
	if err != nil {
		t.Fatal(err)
	}
	defer lanes.Close()
	if err := ctx.Decode([]int32{toks[0]}); err != nil {
		t.Fatal(err)
	}
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	check("loaded by the lanes at HookTopK")
}
