//go:build llamacpp && linux

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/usbmux"
	"github.com/lessim/lessim/usbmux/usbmuxtest"
)

// liveModel writes a small synthetic qwen3moe GGUF on a real disk (tmpfs
// keeps file pages whatever posix_fadvise says).
func liveModel(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lessim-agent-live-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	o := gguf.SynthOptions{Arch: "qwen3moe", Layers: 16, Experts: 32, TopK: 4, Hidden: 256, ExpertFFN: 256,
		Heads: 4, HeadsKV: 4, HeadDim: 64, Context: 256, Quant: "q8_0", RouterCorrelation: 0.8, Seed: 7}
	o.EnsureDefaults()
	path := filepath.Join(dir, "tiny.gguf")
	if err := gguf.SynthMoE(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLiveEngine: an agent serving the live engine runs a spec over the
// wire and returns a measured Result whose stream agrees with it; specs the
// engine cannot honour are refused; the conformance check passes, every
// check run (calibrate with short options, record included).
func TestLiveEngine(t *testing.T) {
	e, err := NewLiveEngine(liveModel(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	e.Lanes = 3 // lessim agent --lanes 3: not live's default (2)
	a := startAgent(t, e, fastLimits())
	spec := `{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 12}}}`
	var samples []TokenSample
	res, facts, err := runRemote(context.Background(), a.target, a.token, json.RawMessage(spec), func(s TokenSample) error {
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if facts.Kind != KindMeasured || facts.RAMBytes <= 0 || facts.PageBytes < 4096 || facts.MemAvailableBytes <= 0 || facts.CoreMaxMHz == "" {
		t.Errorf("facts %+v", facts)
	}
	if res.Source != sim.SourceMeasured || res.Tokens != 12 || res.Policy != "les" {
		t.Errorf("result: source %q, %d tokens, policy %s", res.Source, res.Tokens, res.Policy)
	}
	if err := CheckRun(samples, res); err != nil {
		t.Errorf("stream vs result: %v", err)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "3 I/O lane(s)") {
		t.Errorf("the engine's 3 lanes are not the run's: %q", res.Warnings)
	}

	// Speculative decoding over the wire: one sample per verify pass,
	// carrying the tokens it emitted, which add up to the result's.
	samples = samples[:0]
	spec = `{"policy": {"name": "lru"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 12}},
		"speculative": {"block": 3, "accept": 0.5, "accept_seed": 2, "drafter": {"kind": "controlled"}}}`
	res, _, err = runRemote(context.Background(), a.target, a.token, json.RawMessage(spec), func(s TokenSample) error {
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != 12 || res.Passes >= 12 || res.RejectedDrafts == 0 {
		t.Errorf("speculative: %d tokens in %d passes, %d rejected drafts; want 12 tokens in fewer passes, some rejected", res.Tokens, res.Passes, res.RejectedDrafts)
	}
	if err := CheckRun(samples, res); err != nil {
		t.Errorf("speculative stream vs result: %v", err)
	}

	host, _ := os.Hostname()
	for _, bad := range []struct{ name, spec string }{
		{"cache auto", `{"cache": {"size": "auto"}}`},
		{"trace file", `{"trace": {"path": "/etc/passwd"}}`},
		{"another device", `{"device": {"name": "iphone-17-pro-max"}}`},
		{"another model", `{"model": {"name": "qwen3-30b-a3b"}}`},
		{"speculative", `{"speculative": {"block": 4}}`},
		{"speculative mtp", `{"speculative": {"block": 4, "accept": 0.5, "drafter": {"kind": "mtp"}}}`},
		{"les options", `{"policy": {"name": "les", "les": {"top_n": 3}}}`},
	} {
		_, _, err := runRemote(context.Background(), a.target, a.token, json.RawMessage(bad.spec), nil)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want invalid_spec", bad.spec, err)
			continue
		}
		errgolden.Check(t, bad.name, errors.New(strings.ReplaceAll(err.Error(), "("+host+")", "($HOST)")))
	}

	var lines []string
	Check(context.Background(), a.target, a.token, CheckOptions{Model: "tiny.gguf", Calibrate: true, CalibrateOptions: quickCalibration,
		Spec:   json.RawMessage(`{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 64}}}`),
		Client: Options{Silence: 10 * time.Second}}, func(r CheckResult) {
		lines = append(lines, r.Outcome+"  "+r.Name+": "+r.Detail)
		if r.Outcome != CheckPass {
			t.Errorf("%s %s: %s", r.Outcome, r.Name, r.Detail)
		}
	})
	t.Logf("agent check against the live engine:\n%s", strings.Join(lines, "\n"))

	// The same checks over usb:// through the stand-in usbmuxd relaying to the agent.
	const udid = "00008130-001A2B3C4D5E6F70"
	d, err := usbmuxtest.Start(t.TempDir(), usbmuxtest.Device{ID: 5, UDID: udid, Ports: map[uint16]string{7070: strings.TrimPrefix(a.target, "tcp://")}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rs := Check(context.Background(), "usb://"+udid+":7070", a.token, CheckOptions{Model: "tiny.gguf", Calibrate: true, CalibrateOptions: quickCalibration,
		Spec:   json.RawMessage(`{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 64}}}`),
		Client: Options{Silence: 10 * time.Second, Usbmux: usbmux.ParseAddress(d.Address())}}, nil)
	for _, r := range rs {
		if r.Outcome != CheckPass {
			t.Errorf("usb: %s %s: %s", r.Outcome, r.Name, r.Detail)
		}
	}
	if len(rs) != 15 || d.Count("Connect") < 10 {
		t.Errorf("usb: %d checks, %d connections through the stand-in", len(rs), d.Count("Connect"))
	}
}

// quickCalibration are live calibrate options for tests: a few samples of
// two read sizes, 2 decoded tokens.
var quickCalibration = json.RawMessage(`{"samples": 2, "reads": 4, "tokens": 2, "lanes": [1, 2], "sizes_bytes": [131072, 1048576], "mem_bytes": 16777216}`)

// TestLiveEngineCalibrateRecord: the live engine calibrates this machine
// (the profile validates and names it) and records its routing; bad
// options are refused; a calibrate cancelled mid-way stops and leaves no
// temporary folder behind.
func TestLiveEngineCalibrateRecord(t *testing.T) {
	e, err := NewLiveEngine(liveModel(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a := startAgent(t, e, fastLimits())
	ctx := context.Background()
	c, err := DialWith(ctx, a.target, a.token, Options{Silence: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	y, err := c.Calibrate(ctx, quickCalibration)
	if err != nil {
		t.Fatal(err)
	}
	p, err := devices.ParseProfile(y, "agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Device(); err != nil {
		t.Fatalf("calibrated profile: %v", err)
	}
	for _, bad := range []string{`{"samples": 1000}`, `{"nope": 1}`, `{"sizes_bytes": [1000]}`, `[]`} {
		if _, err := c.Calibrate(ctx, json.RawMessage(bad)); !errors.Is(err, ErrRefused) {
			t.Errorf("options %s: %v, want invalid_spec", bad, err)
		}
	}
	tr, err := c.Record(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if tr.DecodeTokens != 5 || tr.PrefillTokens == 0 || tr.Meta.Origin != "record" || tr.Meta.LookaheadDepth != 1 || tr.Meta.Info["sampler"] != "greedy" {
		t.Errorf("trace: %d decode, %d prefill tokens, origin %q, lookahead %d, info %v", tr.DecodeTokens, tr.PrefillTokens, tr.Meta.Origin, tr.Meta.LookaheadDepth, tr.Meta.Info)
	}

	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := c.Calibrate(cctx, nil); err == nil {
		t.Error("a calibrate cancelled after 300 ms succeeded")
	}
	waitStats(t, a.srv, func(s Stats) bool { return !s.Running })
	left, _ := os.ReadDir(tmp)
	for _, f := range left {
		if strings.HasPrefix(f.Name(), "lessim-") {
			t.Errorf("left behind in TMPDIR: %s", f.Name())
		}
	}
}
