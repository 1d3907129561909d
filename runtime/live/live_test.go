//go:build llamacpp && linux

package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/residency"
	"github.com/lessim/lessim/sim"
)

// diskDir is a test folder on a real disk: tmpfs keeps file pages in memory
// whatever posix_fadvise says.
func diskDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lessim-live-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// tinyModel writes a 16-layer, 32-expert, top-4 synthetic qwen3moe (Q8_0)
// with correlated routers into dir.
func tinyModel(t testing.TB, dir string) string {
	t.Helper()
	o := gguf.SynthOptions{Arch: "qwen3moe", Layers: 16, Experts: 32, TopK: 4, Hidden: 256, ExpertFFN: 256,
		Heads: 4, HeadsKV: 4, HeadDim: 64, Context: 256, Quant: "q8_0", RouterCorrelation: 0.8, Seed: 7}
	o.EnsureDefaults()
	path := filepath.Join(dir, "tiny.gguf")
	if err := gguf.SynthMoE(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

// cacheFraction is frac of the model's routed expert bytes.
func cacheFraction(t testing.TB, path string, frac float64) int64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.ModelSpec()
	if err != nil {
		t.Fatal(err)
	}
	return int64(float64(m.TotalExpertBytes()) * frac)
}

// TestResidentMatchesBooks runs les and then checks, expert by expert with
// mincore, that what the page cache holds is what the books say: every
// expert the books hold resident is wholly resident, every other one has at
// most its boundary pages (shared with neighbours) resident.
func TestResidentMatchesBooks(t *testing.T) {
	path := tinyModel(t, diskDir(t))
	for _, stock := range []bool{false, true} {
		opt := DefaultOptions()
		opt.Model, opt.Cache, opt.Tokens, opt.Stock = path, cacheFraction(t, path, 0.3), 12, stock
		if stock {
			opt.Policy = "ondemand"
		}
		d, res := runDriver(t, opt)
		if res.Tokens != 12 || res.Uses == 0 || res.Misses == 0 {
			t.Fatalf("stock %v: result %+v: want 12 tokens with uses and misses", stock, res)
		}
		t.Logf("stock %v: %d evictions dropped again", stock, d.ctrl.Redrops())
		m := d.mc.Spec
		for k := range len(m.Layers) * m.Experts {
			l, x := sim.Key(k).Split(m.Experts)
			in, total, err := d.ctrl.ResidentPages(residency.Expert{Layer: l, Index: x})
			if err != nil {
				t.Fatal(err)
			}
			boundary := 2 * len(m.Layers[l].Tensors)
			switch st := d.books.State(sim.Key(k)); {
			case st == sim.Resident && in != total:
				t.Errorf("stock %v: layer %d expert %d: books say resident, mincore %d/%d pages", stock, l, x, in, total)
			case st == sim.Absent && in > boundary:
				t.Errorf("stock %v: layer %d expert %d: books say absent, mincore %d/%d pages (boundary allowance %d)", stock, l, x, in, total, boundary)
			case st == sim.Loading:
				t.Errorf("stock %v: layer %d expert %d still loading after the run", stock, l, x)
			}
		}
		d.close()
	}
}

// runDriver runs the driver like Run but keeps it open for inspection.
func runDriver(t *testing.T, opt Options) (*driver, *sim.Result) {
	t.Helper()
	res, _, d, err := runKeep(context.Background(), opt)
	if err != nil {
		if d != nil {
			d.close()
		}
		t.Fatal(err)
	}
	return d, res
}

func TestBadInput(t *testing.T) {
	dir := diskDir(t)
	path := tinyModel(t, dir)
	dense := filepath.Join(dir, "dense.gguf")
	w := gguf.NewWriter()
	if err := w.AddKV("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("blk.0.ffn_up.weight", gguf.TypeF32, []int64{8, 8}, make([]byte, 256)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(dense); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"cache below one layer's top-k", func(o *Options) { o.Cache = 1000 }, "smaller than one layer's top-4"},
		{"unknown policy", func(o *Options) { o.Policy = "nope" }, `unknown policy "nope"`},
		{"not MoE", func(o *Options) { o.Model = dense }, "no MoE layers"},
		{"stock with prefetch", func(o *Options) { o.Stock = true }, "stock mode has no prefetch"},
		{"no tokens", func(o *Options) { o.Tokens = 0 }, "tokens 0"},
	}
	before := entries(t, dir)
	for _, tc := range cases {
		opt := DefaultOptions()
		opt.Model, opt.Cache, opt.Tokens = path, cacheFraction(t, path, 0.3), 4
		tc.edit(&opt)
		_, _, err := Run(context.Background(), opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if after := entries(t, dir); after != before {
		t.Errorf("files left behind: before %q, after %q", before, after)
	}
}

// entries lists a folder's names.
func entries(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}

// BenchmarkLESvsOnDemand runs live les and live ondemand at the same cache
// on the trained-like synthetic model of the default shape (16 layers × 64
// experts, top-8, 1.6 MiB experts: lookahead recall about 0.87, as `lessim
// model synth --preset trained-like` writes it), one compute thread, at 25%
// and at 40% of the expert bytes, and reports les's decode speed over
// ondemand's at each (a ratio from one process, less exposed to machine
// noise than either speed). The two policies alternate within each
// iteration so a slow phase of a shared machine hits both.
func BenchmarkLESvsOnDemand(b *testing.B) {
	o := gguf.TrainedLikeSynthOptions()
	o.EnsureDefaults()
	path := filepath.Join(diskDir(b), "trained-like.gguf")
	if err := gguf.SynthMoE(path, o); err != nil {
		b.Fatal(err)
	}
	fracs := []float64{0.25, 0.40}
	tps := make([][2]float64, len(fracs))
	for b.Loop() {
		for f, frac := range fracs {
			for i, pol := range []string{"les", "ondemand"} {
				opt := DefaultOptions()
				opt.Model, opt.Policy, opt.Cache, opt.Tokens = path, pol, cacheFraction(b, path, frac), 32
				res, _, err := Run(context.Background(), opt)
				if err != nil {
					b.Fatal(err)
				}
				tps[f][i] += res.TokensPerSec
			}
		}
	}
	for f, frac := range fracs {
		pct := fmt.Sprintf("%.0f%%", 100*frac)
		b.ReportMetric(tps[f][0]/float64(b.N), "les-tok/s@"+pct)
		b.ReportMetric(tps[f][1]/float64(b.N), "ondemand-tok/s@"+pct)
		b.ReportMetric(tps[f][0]/tps[f][1], "les/ondemand@"+pct)
	}
}
