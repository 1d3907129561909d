package sim_test

import (
	"testing"

	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// TestBarrier isolates Config.Barrier (a layer's experts compute only once
// all are resident). One layer, top-2: token 0 loads experts 0 and 1; token 1
// selects 0 (a hit) and 2 (a miss whose read, 80 us of latency alone, is
// longer than one expert's compute). In rank order expert 0 computes while 2
// loads; with the barrier it waits too, so token 1 takes exactly one
// expert's compute longer: max(1 MiB / (50 GB/s × 0.5), 2 MiFLOP / 1 TFLOP/s)
// = ceil(41,943.04) = 41,944 ns. Off, nothing changes; misses never change.
func TestBarrier(t *testing.T) {
	m := tinyModel()
	m.Layers = m.Layers[:1]
	m.TopK = 2
	steps := []traces.Step{
		{Pos: 0, Phase: traces.Decode, Pass: 0, Layers: []traces.LayerStep{{Experts: []int32{0, 1}}}},
		{Pos: 1, Phase: traces.Decode, Pass: 1, Layers: []traces.LayerStep{{Experts: []int32{0, 2}}}},
	}
	cfg := baseConfig(8 * mib)
	cfg.Model, cfg.CachedFirst, cfg.KeepSeries = m, false, true
	rank := run(t, cfg, steps, "lru", policies.DefaultParams(m))
	cfg.Barrier = true
	bar := run(t, cfg, steps, "lru", policies.DefaultParams(m))
	const expert = 41944
	if d := bar.Series[1].TimeNS - rank.Series[1].TimeNS; d != expert {
		t.Errorf("token 1: barrier − rank order = %d ns, want one expert's compute %d ns", d, expert)
	}
	if bar.Misses != rank.Misses || bar.Hits != rank.Hits {
		t.Errorf("the barrier changed the cache: misses %d/%d, hits %d/%d", bar.Misses, rank.Misses, bar.Hits, rank.Hits)
	}
	if bar.Series[0].TimeNS != rank.Series[0].TimeNS {
		t.Errorf("token 0 (two misses, nothing to overlap): %d vs %d ns", bar.Series[0].TimeNS, rank.Series[0].TimeNS)
	}
	cfg.CachedFirst = true
	if err := cfg.Validate(); err == nil {
		t.Error("barrier with cached-first was accepted")
	}
	cfg.CachedFirst, cfg.Layout = false, sim.LayoutGGUFMmap
	if err := cfg.Validate(); err == nil {
		t.Error("barrier with gguf-mmap was accepted")
	}
}
