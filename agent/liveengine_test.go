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

	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/sim"
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
// engine cannot honour are refused; the conformance check passes (calibrate
// skipped: the live engine does not announce it).
func TestLiveEngine(t *testing.T) {
	e, err := NewLiveEngine(liveModel(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, e, fastLimits())
	spec := `{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 12}}}`
	var samples []TokenSample
	res, facts, err := RunRemote(context.Background(), a.target, a.token, json.RawMessage(spec), func(s TokenSample) error {
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if facts.Kind != KindMeasured || facts.RAMBytes <= 0 || facts.PageBytes < 4096 {
		t.Errorf("facts %+v", facts)
	}
	if res.Source != sim.SourceMeasured || res.Tokens != 12 || res.Policy != "les" {
		t.Errorf("result: source %q, %d tokens, policy %s", res.Source, res.Tokens, res.Policy)
	}
	if err := CheckRun(samples, res); err != nil {
		t.Errorf("stream vs result: %v", err)
	}

	for _, bad := range []struct{ spec, want string }{
		{`{"cache": {"size": "auto"}}`, "cache auto"},
		{`{"trace": {"path": "/etc/passwd"}}`, "nothing but its engine"},
		{`{"device": {"name": "iphone-17-pro-max"}}`, "measures this machine"},
		{`{"model": {"name": "qwen3-30b-a3b"}}`, "this agent serves"},
		{`{"speculative": {"block": 4}}`, "speculative"},
		{`{"policy": {"name": "les", "les": {"top_n": 3}}}`, "only depth and no_prefetch"},
	} {
		_, _, err := RunRemote(context.Background(), a.target, a.token, json.RawMessage(bad.spec), nil)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want invalid_spec with %q", bad.spec, err, bad.want)
		}
	}

	var lines []string
	Check(context.Background(), a.target, a.token, CheckOptions{Model: "tiny.gguf", Calibrate: true,
		Spec:   json.RawMessage(`{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 64}}}`),
		Client: Options{Silence: 10 * time.Second}}, func(r CheckResult) {
		lines = append(lines, r.Outcome+"  "+r.Name+": "+r.Detail)
		if r.Outcome == CheckFail || (r.Outcome == CheckSkip && r.Name != "calibrate") {
			t.Errorf("%s %s: %s", r.Outcome, r.Name, r.Detail)
		}
	})
	t.Logf("agent check against the live engine:\n%s", strings.Join(lines, "\n"))
}
