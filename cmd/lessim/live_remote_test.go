package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/reports"
)

// startInProcessAgent serves the simulator of the default device with
// model loaded on a loopback port until the test ends.
func startInProcessAgent(t *testing.T, model string) (target, token string) {
	t.Helper()
	p, err := devices.LoadProfile(defaultDevice)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := agent.NewSimEngine(p, version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.LoadModel(context.Background(), model); err != nil {
		t.Fatal(err)
	}
	if token, err = agent.NewToken(); err != nil {
		t.Fatal(err)
	}
	ln, err := agent.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := &agent.Server{Engine: eng, Token: token, Agent: "lessim test"}
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "tcp://" + ln.Addr().String(), token
}

// TestLiveTarget: live --target runs on the agent; the result equals
// `lessim simulate` of the same settings on the agent's device and model
// byte for byte, and the output records the device facts the agent
// reported. Flags the agent decides are refused; a wrong token is an auth
// error.
func TestLiveTarget(t *testing.T) {
	target, token := startInProcessAgent(t, "qwen3-30b-a3b")
	out := runCLI(t, "", "live", "--target", target, "--token", token, "--policy", "les", "--cache", "40%", "--tokens", "30",
		"--depth", "2", "--format", "json")
	var got struct {
		Target string            `json:"target"`
		Device agent.DeviceFacts `json:"device"`
		Spec   json.RawMessage   `json:"spec"`
		Result json.RawMessage   `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Target != target || got.Device.Kind != agent.KindSimulated || got.Device.Model != defaultDevice || got.Device.Engine != "lessim-sim" {
		t.Errorf("target %q, device %+v", got.Target, got.Device)
	}
	local := runCLI(t, "", "simulate", "--model", "qwen3-30b-a3b", "--policy", "les", "--cache", "40%", "--tokens", "30",
		"--depth", "2", "--format", "json")
	var want struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(local), &want); err != nil {
		t.Fatal(err)
	}
	if string(got.Result) != string(want.Result) {
		t.Fatalf("live --target result differs from simulate:\n%s\n%s", got.Result, want.Result)
	}

	// One spec, and it reruns the measured run: live --spec of live's own
	// JSON gives the same result and prints the same spec.
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil || len(top) != 4 || top["spec"] == nil || top["inputs"] != nil {
		t.Fatalf("live json: want target, device, one spec and the result: %s", out)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	var again struct {
		Spec   json.RawMessage `json:"spec"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(runCLI(t, dir, "live", "--target", target, "--token", token, "--spec", "run.json", "--format", "json")), &again); err != nil {
		t.Fatal(err)
	}
	if string(again.Result) != string(got.Result) || string(again.Spec) != string(got.Spec) {
		t.Errorf("live --spec of live's JSON: spec %s result %s\nwant spec %s result %s", again.Spec, again.Result, got.Spec, got.Result)
	}
	// A host group is this machine's: an agent cannot take it.
	host := strings.Replace(out, `"spec": {`, `"spec": {"host": {"model_file": "x.gguf"},`, 1)
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(host), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLIErr(t, dir, "live", "--target", target, "--token", token, "--spec", "host.json"); !errors.Is(err, agent.ErrInvalidSpec) || !strings.Contains(err.Error(), agent.CapHost) {
		t.Errorf("a host group sent to an agent: %v", err)
	}

	txt := runCLI(t, "", "live", "--target", target, "--token", token, "--policy", "lru", "--cache", "25%", "--tokens", "8")
	for _, w := range []string{"target", target, "simulated " + defaultDevice, "lessim-sim", "8 tokens in 8 passes"} {
		if !strings.Contains(txt, w) {
			t.Errorf("text output lacks %q:\n%s", w, txt)
		}
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--token", token, "--model", "x.gguf"}, "--model does not apply with --target"},
		{[]string{"--token", token, "--policy", "lru", "--depth", "2"}, "settings of les"},
		{[]string{"--token", token, "--policy", "lru2", "--depth", "2"}, `--policy: unknown policy "lru2" (valid: belady, les, lfu, lru, ondemand, oracle, pinned-hot)`},
		{[]string{"--token", strings.Repeat("0", 32)}, "wrong token"},
		{[]string{"--token", token, "--cache", "auto"}, ""},
	} {
		_, _, err := runCLIErr(t, ".", append([]string{"live", "--target", target, "--tokens", "4"}, bad.args...)...)
		if bad.want == "" {
			if err != nil {
				t.Errorf("%v: %v", bad.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.args, err, bad.want)
		}
	}
	if _, _, err := runCLIErr(t, ".", "live", "--target", "ftp://x", "--token", token); err == nil {
		t.Error("a bad target scheme was accepted")
	}
}

// TestCalibrateTarget: calibrate --target writes the profile the agent
// returns (the simulator agent's: its device's profile), checked; flags of
// the other modes and --token alone are refused.
func TestCalibrateTarget(t *testing.T) {
	target, token := startInProcessAgent(t, "qwen3-30b-a3b")
	dir := t.TempDir()
	out := runCLI(t, dir, "calibrate", "--target", target, "--token", token, "--out", "remote.yaml")
	if !strings.HasPrefix(out, "wrote remote.yaml: device "+defaultDevice) || !strings.Contains(out, "simulated "+defaultDevice) {
		t.Errorf("output: %s", out)
	}
	p, err := devices.ParseProfileFile(filepath.Join(dir, "remote.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := devices.LoadProfile(defaultDevice)
	a, _ := p.Device()
	b, _ := want.Device()
	if !reflect.DeepEqual(a, b) {
		t.Errorf("written profile differs from the agent's device:\n%+v\n%+v", a, b)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", target, "--token", token, "--model", "x.gguf"}, "--model"},
		{[]string{"--target", target, "--token", token, "--from-run", "x.csv"}, "--from-run"},
		{[]string{"--token", token, "--model", "x.gguf"}, "--token applies only with --target"},
		{[]string{"--target", target, "--token", strings.Repeat("0", 32)}, "wrong token"},
		{[]string{"--target", target, "--token", token, "--samples", "2", "--sizes", "5KiB"}, "--sizes does not apply with --target " + target + ": a simulator agent's calibration measures nothing (its profile is the calibration)\n--samples does not apply"},
		{[]string{"--target", target, "--token", token, "--samples", "0"}, "--samples 0: want at least 1 (samples per measured value)"},
		{[]string{"--target", target, "--token", token, "--tokens", "1"}, "--tokens 1: want at least 2"},
		{[]string{"--target", target, "--token", token, "--lanes", "1,x"}, "--lanes"},
	} {
		_, _, err := runCLIErr(t, dir, append([]string{"calibrate", "--out", "x.yaml"}, bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.args, err, bad.want)
		}
	}
}

// TestValidateTarget: validate --target against the simulator agent, with
// the profile from calibrate --target: the agent records the routing its
// runs simulate, so every prediction equals its measurement (0.0% error);
// the table, the rows (the measured ones recording the agent's device
// facts) and the plot are written. Local-only flags are refused.
func TestValidateTarget(t *testing.T) {
	target, token := startInProcessAgent(t, "qwen3-30b-a3b")
	dir := t.TempDir()
	runCLI(t, dir, "calibrate", "--target", target, "--token", token, "--out", "remote.yaml")
	out := runCLI(t, dir, "validate", "--target", target, "--token", token, "--device-file", "remote.yaml", "--policies", "lru,les",
		"--caches", "25%,40%", "--tokens", "16", "--repeats", "1", "--quiet", "--out", "val")
	for _, want := range []string{"measured on simulated " + defaultDevice + " at " + target, "trace val/trace/trace.parquet (recorded by the agent), 16 decode tokens",
		"MAPE (tokens/s): 0.0% over 4 points", "ranking preserved at every cache size: yes", "wrote val/results.parquet (8 rows)", "predicted-vs-measured.png"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	tab, err := reports.ReadTables(filepath.Join(dir, "val", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var facts int
	for i := range tab.Len() {
		if strings.Contains(tab.Str("device", i), target) {
			facts++
		}
	}
	if facts != 4 {
		t.Errorf("%d rows carry the agent's facts, want the 4 measured", facts)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", target, "--token", token, "--model", "x.gguf"}, "--model does not apply with --target"},
		{[]string{"--target", target, "--token", token, "--lanes", "2"}, "--lanes does not apply with --target"},
		{[]string{"--model", "x.gguf", "--token", token}, "--token applies only with --target"},
		{[]string{"--target", target, "--token", strings.Repeat("0", 32)}, "wrong token"},
	} {
		_, _, err := runCLIErr(t, dir, append([]string{"validate", "--device-file", "remote.yaml", "--out", "v2"}, bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.args, err, bad.want)
		}
	}
}
