package validation

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/traces"
)

// checkFixture writes a tiny GGUF (2 MoE layers × 4 experts, top-2), a
// device profile and a trace of another model (qwen3-30b-a3b) into dir.
func checkFixture(t *testing.T, dir string) (model, profile, otherTrace string) {
	t.Helper()
	model = filepath.Join(dir, "tiny.gguf")
	o := gguf.SynthOptions{Arch: "qwen3moe", Layers: 2, Experts: 4, TopK: 2, Hidden: 64, ExpertFFN: 32, Heads: 2, HeadsKV: 1,
		HeadDim: 32, Context: 256, Vocab: 300, Quant: "q8_0", RouterCorrelation: 0.7, AttentionScale: 1, Seed: 1}
	if err := gguf.SynthMoE(model, o); err != nil {
		t.Fatal(err)
	}
	p, err := devices.LoadProfile("iphone-17-pro-max")
	if err != nil {
		t.Fatal(err)
	}
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	profile = filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(profile, y, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := devices.LookupModel(devices.Qwen3_30BA3B, "")
	if err != nil {
		t.Fatal(err)
	}
	so := traces.DefaultSynthOptions()
	so.Tokens = 4
	meta, steps, err := traces.Synth(m, so)
	if err != nil {
		t.Fatal(err)
	}
	otherTrace = filepath.Join(dir, "q.parquet")
	if err := traces.WriteFile(otherTrace, meta, traces.NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
	return model, profile, otherTrace
}

// TestCheckRefuses: a trace of another model, an output that is an input
// (a --device-file under Out/fit/ of an earlier run), lanes out of range;
// each is refused by Check before any work, and a refused validation
// leaves no --out folder behind.
func TestCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	model, profile, other := checkFixture(t, dir)
	short := shortTrace(t, dir, model, 3)
	base := Options{Model: model, DeviceFile: profile, Policies: []string{"les", "ondemand"}, Caches: []string{"50%"},
		Tokens: 4, Repeats: 1}
	fitted := filepath.Join(dir, "v8", FitProfileFile)
	if err := os.MkdirAll(filepath.Dir(fitted), 0o755); err != nil {
		t.Fatal(err)
	}
	y, _ := os.ReadFile(profile)
	if err := os.WriteFile(fitted, y, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Options){
		"other model's trace": func(o *Options) { o.Trace = other },
		"fit overwrites the profile": func(o *Options) {
			o.Out, o.DeviceFile, o.Fit = filepath.Join(dir, "v8"), fitted, []string{"ondemand:50%", "les:50%"}
		},
		"trace is an output":      func(o *Options) { o.Out, o.Trace = dir, filepath.Join(dir, TableFile) },
		"lanes -1":                func(o *Options) { o.Lanes = -1 },
		"lanes not the profile's": func(o *Options) { o.Lanes = 2 },
		"trace of 3 tokens":       func(o *Options) { o.Trace = short },
		"oracle live":             func(o *Options) { o.Policies = []string{"oracle", "lru"} },
	} {
		o := base
		o.Out = filepath.Join(dir, "out-"+strings.ReplaceAll(name, " ", "-"))
		mut(&o)
		if o.Trace == filepath.Join(dir, TableFile) {
			os.WriteFile(o.Trace, []byte("x"), 0o644)
		}
		errgolden.Check(t, name, errgolden.Err(o.Check()))
		if strings.HasPrefix(filepath.Base(o.Out), "out-") {
			if _, err := os.Stat(o.Out); err == nil {
				t.Errorf("%s: a refused validation created %s", name, o.Out)
			}
		}
	}
	if b, _ := os.ReadFile(fitted); string(b) != string(y) {
		t.Error("the profile under fit/ changed")
	}
	for _, lanes := range []int{0, 4} { // none, or the profile's
		o := base
		o.Out, o.Lanes = filepath.Join(dir, "ok"), lanes
		c, err := o.Check()
		if err != nil {
			t.Errorf("good options, lanes %d: %v", lanes, err)
			continue
		}
		// The live runs keep the profile's reads in flight (4), not live's
		// default (2): with fewer, more prefetches are still loading when
		// their layer needs them, and predicted vs measured hit rates part.
		raw, err := o.MeasuredSpec(c, "les", "25%", 4)
		if err != nil {
			t.Fatal(err)
		}
		s, err := experiment.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if h := s.Host; h == nil || *h != (experiment.Host{ModelFile: o.Model, Lanes: 4, Threads: 1}) {
			t.Errorf("lanes %d: live runs with host group %+v; want the profile's 4 lanes, 1 thread, the default prompt", lanes, h)
		}
	}
}

// TestCheckTraceModelFile: a recorded trace (model_size and model_sha256
// in its info) of a model of the same shape but another file is refused;
// of the same file it passes.
func TestCheckTraceModelFile(t *testing.T) {
	dir := t.TempDir()
	model, _, _ := checkFixture(t, dir)
	r, err := record.CheckModel(model)
	if err != nil {
		t.Fatal(err)
	}
	r.File.Close()
	sum, err := traces.FileSHA256(model)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(model)
	write := func(name, sha string) string {
		so := traces.DefaultSynthOptions()
		so.Tokens = 2
		meta, steps, err := traces.Synth(r.Spec, so)
		if err != nil {
			t.Fatal(err)
		}
		meta.Info = map[string]string{"model_sha256": sha, "model_size": strconv.FormatInt(st.Size(), 10)}
		path := filepath.Join(dir, name)
		if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if err := checkTraceModel(write("same.parquet", sum), r.Spec, model); err != nil {
		t.Errorf("the model's own trace: %v", err)
	}
	errgolden.Check(t, "another file", checkTraceModel(write("other.parquet", strings.Repeat("0", 64)), r.Spec, model))
}

// shortTrace writes a synthetic trace of model's shape with tokens decode
// tokens into dir.
func shortTrace(t *testing.T, dir, model string, tokens int) string {
	t.Helper()
	mc, err := record.CheckModel(model)
	if err != nil {
		t.Fatal(err)
	}
	mc.File.Close()
	so := traces.DefaultSynthOptions()
	so.Tokens = tokens
	meta, steps, err := traces.Synth(mc.Spec, so)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "short.parquet")
	if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
	return path
}
