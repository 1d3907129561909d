//go:build llamacpp && linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/sim"
)

// TestLiveTargetLiveEngine: the path the issue describes, in one process:
// an agent serving the live engine on a synthetic GGUF (as `lessim agent
// --model tiny.gguf` does), and `lessim live --target` measuring through it.
func TestLiveTargetLiveEngine(t *testing.T) {
	dir, addr, token := serveLiveAgent(t, "lessim-live-target-", "4", 3) // lessim agent --lanes 3
	target := "tcp://" + addr

	out := runCLI(t, dir, "live", "--target", target, "--token", token, "--policy", "les", "--cache", "40%", "--tokens", "6", "--format", "json")
	var got liveOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	r := got.Result
	if got.Device.Kind != agent.KindMeasured || got.Device.Engine == "" || r.Source != sim.SourceMeasured || r.Tokens != 6 || r.Policy != "les" || r.TimeNS <= 0 {
		t.Errorf("device %+v, result source %q, %d tokens, policy %s, time %d", got.Device, r.Source, r.Tokens, r.Policy, r.TimeNS)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "3 I/O lane(s)") {
		t.Errorf("the agent's --lanes 3 is not the run's: %q", r.Warnings)
	}
	txt := runCLI(t, dir, "live", "--target", target, "--token", token, "--policy", "ondemand", "--cache", "40%", "--tokens", "4", "--stock")
	if !strings.Contains(txt, "measured") || !strings.Contains(txt, "4 tokens in 4 passes") {
		t.Errorf("text output:\n%s", txt)
	}
}

// serveLiveAgent writes a synthetic GGUF of layers MoE layers (16 experts,
// top-4) into a new folder on a real disk (prefix names it) and serves it
// with the live engine, as `lessim agent --model tiny.gguf --lanes LANES`
// does (0: live's default), until the test ends. It returns the folder, the agent's address and its token.
func serveLiveAgent(t *testing.T, prefix, layers string, lanes int) (dir, addr, token string) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", prefix)
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	runCLI(t, dir, "model", "synth", "--layers", layers, "--experts", "16", "--top-k", "4", "--hidden", "128",
		"--expert-ffn", "128", "--heads", "4", "--heads-kv", "2", "--head-dim", "32", "--quant", "q8_0",
		"--router-correlation", "0.7", "--seed", "1", "--out", "tiny.gguf")
	eng, err := agentEngine(context.Background(), &agentFlags{model: filepath.Join(dir, "tiny.gguf"), lanes: lanes})
	if err != nil {
		t.Fatal(err)
	}
	token, _ = agent.NewToken()
	ln, err := agent.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&agent.Server{Engine: eng, Token: token, Agent: "lessim test"}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return dir, ln.Addr().String(), token
}
