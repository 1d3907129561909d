package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/usbmux/usbmuxtest"
)

// TestAgentGolden pins the agent commands' refusals and `devices usb`
// against a stand-in usbmuxd listing one device.
func TestAgentGolden(t *testing.T) {
	d, err := usbmuxtest.Start(t.TempDir(), usbmuxtest.Device{ID: 4, UDID: "00008130-001A2B3C4D5E6F70"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	t.Setenv("USBMUXD_SOCKET_ADDRESS", d.Address())
	t.Setenv(tokenEnv, "")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"devices-usb", []string{"devices", "usb"}},
		{"devices-usb-json", []string{"devices", "usb", "--format", "json"}},
		{"devices-usb-watch", []string{"devices", "usb", "--watch", "300ms"}},
		{"err-agent-remote", []string{"agent", "--listen", "0.0.0.0:7070"}},
		{"err-agent-playback", []string{"agent", "--playback", "-1"}},
		{"err-agent-playback-inf", []string{"agent", "--playback", "Inf"}},
		{"err-agent-gguf-playback", []string{"agent", "--model", "tiny.gguf", "--playback", "2"}},
		{"err-agent-gguf-device", []string{"agent", "--model", "tiny.gguf", "--device", "iphone-17-pro-max"}},
		{"err-agent-gguf-lanes", []string{"agent", "--model", "tiny.gguf", "--lanes", "300"}},
		{"err-agent-sim-lanes", []string{"agent", "--model", "qwen3-30b-a3b", "--lanes", "2"}},
		{"err-devices-usb-watch", []string{"devices", "usb", "--watch", "-1s"}},
		{"err-agent-unknown-model", []string{"agent", "--listen", "127.0.0.1:0", "--model", "gpt-5"}},
		{"err-agent-unknown-variant", []string{"agent", "--listen", "127.0.0.1:0", "--model", "qwen3-30b-a3b:q9"}},
		{"err-agent-device-pair", []string{"agent", "--listen", "127.0.0.1:0", "--device", "iphone-17-pro-max", "--device-file", "x.yaml"}},
		{"err-agent-check-target", []string{"agent", "check", "http://127.0.0.1:7070", "--token", "x"}},
		{"err-agent-check-token", []string{"agent", "check", "tcp://127.0.0.1:7070"}},
		{"err-agent-check-cancel-within", []string{"agent", "check", "tcp://127.0.0.1:7070", "--token", strings.Repeat("0", 32), "--cancel-within", "0s"}},
		{"err-agent-check-token-form", []string{"agent", "check", "tcp://127.0.0.1:7070", "--token", "0123456789abcdef0123456789abcdef "}},
		// Port 1: nothing listens there (privileged, unassigned on loopback).
		{"err-agent-check-unreachable", []string{"agent", "check", "tcp://127.0.0.1:1", "--token", strings.Repeat("0", 32)}},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, runCLI(t, "", tc.args...)) })
	}
	// --device's help names its list command, not a placeholder taken
	// from back-quoted text ("--device lessim devices list").
	if help := runCLI(t, "", "agent", "--help"); !strings.Contains(help, "--device string ") || strings.Contains(help, "--device lessim") {
		t.Errorf("agent --help:\n%s", help)
	}
	t.Setenv(tokenEnv, "not-hex")
	if got := runCLI(t, "", "agent", "--listen", "127.0.0.1:0"); !strings.Contains(got, "32 hex") {
		t.Errorf("malformed $%s: %q", tokenEnv, got)
	}
}

// TestDevicesUSBNoDaemon: no daemon is a clear error.
func TestDevicesUSBNoDaemon(t *testing.T) {
	t.Setenv("USBMUXD_SOCKET_ADDRESS", "UNIX:"+filepath.Join(t.TempDir(), "none"))
	if got := runCLI(t, "", "devices", "usb"); !strings.Contains(got, "is usbmuxd running?") {
		t.Errorf("%q", got)
	}
}

// agentProcess is a `lessim agent` running as its own process.
type agentProcess struct {
	cmd    *exec.Cmd
	addr   string // HOST:PORT
	token  string
	stderr *strings.Builder
}

// startAgentProcess builds lessim and starts `lessim agent` with args on a
// free loopback port.
func startAgentProcess(t *testing.T, args ...string) *agentProcess {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found: cannot build lessim for the process test")
	}
	bin := filepath.Join(t.TempDir(), "lessim")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"agent", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), tokenEnv+"=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &agentProcess{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for i := 0; i < 2 && sc.Scan(); i++ {
		l := sc.Text()
		if a, ok := strings.CutPrefix(l[strings.LastIndex(l, " ")+1:], "tcp://"); ok && strings.HasPrefix(l, "lessim agent: serving") {
			p.addr = a
		}
		if tok, ok := strings.CutPrefix(l, "token: "); ok {
			p.token = tok
		}
	}
	go io.Copy(io.Discard, stdout)
	if p.addr == "" || !agent.ValidToken(p.token) {
		t.Fatalf("agent did not print its address and token (stderr: %s)", p.stderr)
	}
	return p
}

// notPassed is the lines of `lessim agent check` output that are not a
// passed check: the FAIL and SKIP lines, the summary and any error.
func notPassed(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, agent.CheckPass+" ") && !strings.HasPrefix(l, "checking the agent at ") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// stop interrupts the agent and checks it exits cleanly.
func (p *agentProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("agent exited with %v after SIGINT (stderr: %s)", err, p.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("agent still running 10 s after SIGINT")
	}
	if !strings.Contains(p.stderr.String(), "lessim agent: stopped after") {
		t.Errorf("no summary on stderr: %s", p.stderr)
	}
}

// TestAgentProcess runs a real `lessim agent` process: a run through it
// equals `lessim simulate` of the same settings; `lessim agent check` passes
// over tcp:// and over usb:// through a stand-in usbmuxd relaying to the
// agent's port; SIGINT stops it cleanly.
func TestAgentProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds lessim and waits out the header timeout")
	}
	p := startAgentProcess(t, "--model", "qwen3-30b-a3b", "--playback", "10")
	target := "tcp://" + p.addr

	spec := `{"model": {"name": "qwen3-30b-a3b"}, "policy": {"name": "lru"}, "cache": {"size": "40%"},
		"trace": {"synthetic": {"tokens": 40, "seed": 2}}}`
	c, err := agent.Dial(context.Background(), target, p.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), json.RawMessage(spec), nil)
	facts := c.Facts()
	if err != nil {
		t.Fatal(err)
	}
	if facts.Model != defaultDevice || facts.Kind != agent.KindSimulated {
		t.Errorf("facts %+v", facts)
	}
	var local simulateOutput
	out := runCLI(t, "", "simulate", "--model", "qwen3-30b-a3b", "--policy", "lru", "--cache", "40%", "--tokens", "40", "--seed", "2", "--format", "json")
	if err := json.Unmarshal([]byte(out), &local); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	a, _ := json.Marshal(res)
	b, _ := json.Marshal(local.Result)
	if string(a) != string(b) {
		t.Fatalf("remote result differs from lessim simulate:\n%s\n%s", a, b)
	}

	// A generous cancel limit and a run three times the default's length
	// (about 0.8 s at playback 10): the host running the tests may be loaded,
	// and a run that ends before a busy or cancel probe reaches the agent
	// makes that check skip.
	longer := strings.Replace(agent.DefaultCheckSpec, `"tokens": 16`, `"tokens": 48`, 1)
	if longer == agent.DefaultCheckSpec {
		t.Fatalf("DefaultCheckSpec changed: %s", agent.DefaultCheckSpec)
	}
	checkSpec := filepath.Join(t.TempDir(), "check.json")
	if err := os.WriteFile(checkSpec, []byte(longer), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, target string) {
		out := runCLI(t, "", "agent", "check", target, "--token", p.token, "--model", "qwen3-30b-a3b", "--calibrate", "--cancel-within", "10s", "--spec", checkSpec)
		if !strings.Contains(out, "15 passed, 0 failed, 0 skipped") {
			t.Errorf("agent check %s: not all checks passed:\n%s\nthe whole output:\n%s", target, notPassed(out), out)
		}
	}
	t.Run("check tcp", func(t *testing.T) { check(t, target) })
	t.Run("check usb", func(t *testing.T) {
		const udid = "00008130-001A2B3C4D5E6F70"
		d, err := usbmuxtest.Start(t.TempDir(), usbmuxtest.Device{ID: 9, UDID: udid, Ports: map[uint16]string{7070: p.addr}})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		t.Setenv("USBMUXD_SOCKET_ADDRESS", d.Address())
		check(t, "usb://"+udid+":7070")
		if d.Count("Connect") < 10 {
			t.Errorf("only %d connections went through the stand-in usbmuxd", d.Count("Connect"))
		}
	})
	p.stop(t)
}
