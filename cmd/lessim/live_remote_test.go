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
	"github.com/lessim/lessim/internal/errgolden"
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
	_, _, err := runCLIErr(t, dir, "live", "--target", target, "--token", token, "--spec", "host.json")
	if !errors.Is(err, agent.ErrInvalidSpec) {
		t.Errorf("a host group sent to an agent: %v", err)
	}
	errgolden.Check(t, "host-group", errAt(err, target))

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
		{[]string{"--token", token, "--model", "x.gguf"}, "model"},
		{[]string{"--token", token, "--policy", "lru", "--depth", "2"}, "depth-not-les"},
		{[]string{"--token", token, "--policy", "lru2", "--depth", "2"}, "unknown-policy"},
		{[]string{"--token", strings.Repeat("0", 32)}, "wrong-token"},
		{[]string{"--token", token, "--cache", "auto"}, ""},
	} {
		_, _, err := runCLIErr(t, ".", append([]string{"live", "--target", target, "--tokens", "4"}, bad.args...)...)
		if bad.want == "" {
			if err != nil {
				t.Errorf("%v: %v", bad.args, err)
			}
			continue
		}
		errgolden.Check(t, bad.want, errAt(err, target))
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
		{[]string{"--target", target, "--token", token, "--model", "x.gguf"}, "model"},
		{[]string{"--target", target, "--token", token, "--from-run", "x.csv"}, "from-run"},
		{[]string{"--target", target, "--token", token, "--draft-model", "d.gguf"}, "draft-model"},
		{[]string{"--token", token, "--model", "x.gguf"}, "token-alone"},
		{[]string{"--target", target, "--token", strings.Repeat("0", 32)}, "wrong-token"},
		{[]string{"--target", target, "--token", token, "--samples", "2", "--sizes", "5KiB"}, "measuring-on-simulator"},
		{[]string{"--target", target, "--token", token, "--samples", "0"}, "samples-0"},
		{[]string{"--target", target, "--token", token, "--tokens", "1"}, "tokens-1"},
		{[]string{"--target", target, "--token", token, "--lanes", "1,x"}, "lanes-not-numbers"},
	} {
		_, _, err := runCLIErr(t, dir, append([]string{"calibrate", "--out", "x.yaml"}, bad.args...)...)
		errgolden.Check(t, bad.want, errAt(err, target))
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
		{[]string{"--target", target, "--token", token, "--model", "x.gguf"}, "model"},
		{[]string{"--target", target, "--token", token, "--lanes", "2"}, "lanes"},
		{[]string{"--model", "x.gguf", "--token", token}, "token-alone"},
		{[]string{"--target", target, "--token", strings.Repeat("0", 32)}, "wrong-token"},
	} {
		_, _, err := runCLIErr(t, dir, append([]string{"validate", "--device-file", "remote.yaml", "--out", "v2"}, bad.args...)...)
		errgolden.Check(t, bad.want, errAt(err, target))
	}
}

// errAt is err with the agent's address (a free port) written $TARGET, for
// errgolden.
func errAt(err error, target string) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.ReplaceAll(err.Error(), target, "$TARGET"))
}
