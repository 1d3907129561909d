//go:build llamacpp && linux

package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/fit"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/sim"
)

// TestRunRemoteLiveEngine: validate against an agent serving the live
// engine, everything through the protocol: the agent calibrates this
// machine (short options), records its model's routing, and runs each
// point; the host simulates the recorded trace with the calibrated
// profile. The measured points are the agent's live runs: measured
// results of the requested tokens, hits and misses adding up to the
// trace's uses, and the agent's device facts recorded.
func TestRunRemoteLiveEngine(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "lessim-validate-remote-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	o := gguf.SynthOptions{Arch: "qwen3moe", Layers: 8, Experts: 16, TopK: 4, Hidden: 128, ExpertFFN: 128,
		Heads: 4, HeadsKV: 2, HeadDim: 32, Context: 256, Quant: "q8_0", RouterCorrelation: 0.7, Seed: 1}
	o.EnsureDefaults()
	model := filepath.Join(dir, "tiny.gguf")
	if err := gguf.SynthMoE(model, o); err != nil {
		t.Fatal(err)
	}
	e, err := agent.NewLiveEngine(model, "test")
	if err != nil {
		t.Fatal(err)
	}
	token, _ := agent.NewToken()
	ln, err := agent.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&agent.Server{Engine: e, Token: token, Agent: "validation test"}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	target := "tcp://" + ln.Addr().String()

	c, err := agent.Dial(context.Background(), target, token)
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.Calibrate(context.Background(),
		[]byte(`{"samples": 2, "reads": 4, "tokens": 2, "lanes": [1, 2], "sizes_bytes": [131072, 1048576], "mem_bytes": 16777216}`))
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "remote.yaml")
	if err := os.WriteFile(profile, y, 0o644); err != nil {
		t.Fatal(err)
	}
	vo := Options{Target: target, DeviceFile: profile, Policies: []string{"lru", "les"}, Caches: []string{"40%"},
		Tokens: 6, Repeats: 1, Out: filepath.Join(dir, "v"), Version: "test"}
	rep, err := runRemote(context.Background(), vo, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Stage.Commit(); err != nil {
		t.Fatal(err)
	}
	if rep.Facts == nil || rep.Facts.Kind != agent.KindMeasured {
		t.Fatalf("facts %+v", rep.Facts)
	}
	for i, p := range rep.Points {
		m := p.Measured[0]
		if m.Source != sim.SourceMeasured || m.Tokens != 6 || m.Policy != p.Policy || m.Device != DescribeFacts(*rep.Facts, target) {
			t.Errorf("%s: measured source %q, %d tokens, policy %s, device %q", p.Policy, m.Source, m.Tokens, m.Policy, m.Device)
		}
		if m.Uses != p.Predicted.Uses || m.Uses == 0 {
			t.Errorf("%s: the live run used %d experts, the recorded trace %d: not the same routing", p.Policy, m.Uses, p.Predicted.Uses)
		}
		if p.Policy != "lru" {
			continue
		}
		// The live run prefills its prompt through the books (the cache is
		// warm when decode starts); validate's simulated spec starts decode
		// cold. With the prompt replayed, LRU on the recorded routing makes
		// exactly the live run's hits and misses: the routing is the same.
		s := rep.Specs[i]
		s.Prefill = true
		var in experiment.Inputs
		plan, err := in.Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		out, err := plan.Run()
		if err != nil {
			t.Fatal(err)
		}
		if m.Hits != out.Result.Hits || m.Misses != out.Result.Misses {
			t.Errorf("lru: live hits/misses %d/%d, simulated on the recorded routing with its prompt %d/%d (without %d/%d)",
				m.Hits, m.Misses, out.Result.Hits, out.Result.Misses, p.Predicted.Hits, p.Predicted.Misses)
		}
	}
	t.Logf("predicted vs measured on the agent: MAPE %.1f%%", rep.Summary.MAPE)

	// --fit through the agent: the fit runs' per-token series come over the
	// protocol (run.series), are written where a local fit run writes them,
	// and the fitted profile simulates the points; the held-out MAPE covers
	// the point the fit never saw.
	fo := vo
	fo.Out, fo.Trace, fo.Fit = filepath.Join(dir, "vfit"), rep.Trace, []string{"lru:40%", "les:25%"}
	frep, err := runRemote(context.Background(), fo, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := frep.Stage.Commit(); err != nil {
		t.Fatal(err)
	}
	if frep.Fit == nil || frep.Summary.HeldOut != 1 || len(frep.Summary.FitPoints) != 2 {
		t.Fatalf("fit %+v, held out %d, fit points %v", frep.Fit, frep.Summary.HeldOut, frep.Summary.FitPoints)
	}
	t.Logf("with the profile fitted through the agent: MAPE %.1f%%, held out %.1f%%", frep.Summary.MAPE, frep.Summary.HeldOutMAPE)
	checkLocalFit(t, profile, frep, fo)
}

// checkLocalFit: the profile a remote validation fitted equals, field by
// field, the profile fit.FromRuns (calibrate --from-run's fit) makes from
// the same series files on this side: the series that came over the
// protocol are the whole input of the fit.
func checkLocalFit(t *testing.T, profile string, rep *Report, o Options) {
	t.Helper()
	base, err := devices.ParseProfileFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	var in experiment.Inputs
	var ms []fit.Measured
	for _, i := range RoundOrder(0, len(rep.Fit.Points)) { // one round
		p := rep.Fit.Points[i]
		run, err := runs.ReadLiveSeries(fitSeriesPath(o.Out, p, 0))
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Tokens) != o.Tokens || !run.Has(runs.FieldRead) || !run.Has(runs.FieldFaults) {
			t.Fatalf("%s: %d tokens, fields %v", p, len(run.Tokens), run.Fields)
		}
		plan, err := in.Resolve(experiment.Spec{Version: experiment.Version, Trace: experiment.Trace{Path: rep.Trace},
			Device: experiment.Device{File: profile}, Policy: experiment.Policy{Name: p.Policy}, Cache: experiment.Cache{Bytes: p.CacheBytes},
			Layout: string(sim.LayoutPerExpert), Barrier: true, Prefill: true})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, fit.Measured{Run: run, Plan: plan})
	}
	local, err := fit.FromRuns(base, ms, "live runs on the agent at "+o.Target+" of lru at 40% and les at 25%")
	if err != nil {
		t.Fatal(err)
	}
	remote, err := devices.ParseProfileFile(rep.Fit.Profile)
	if err != nil {
		t.Fatal(err)
	}
	ly, _ := local.Profile.YAML()
	ry, _ := remote.YAML()
	if string(ly) != string(ry) {
		t.Errorf("the remote fit's profile differs from the local fit of the same series:\n%s\nlocal:\n%s", ry, ly)
	}
	if fmt.Sprintf("%+v", local.Params) != fmt.Sprintf("%+v", rep.Fit.Fit.Params) { // NB: compared as printed, values and reasons alike
		t.Errorf("fitted parameters: remote %+v, local %+v", rep.Fit.Fit.Params, local.Params)
	}
}
