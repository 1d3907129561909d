package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/atomicfile/atomictest"
	"github.com/lessim/lessim/sim"
)

// stallEngine is the simulator engine with its runs and calibrations
// stalled: each says on entered that it started, waits for the client to
// cancel (or hang up) and says on released that it saw it. Loading and
// recording are the simulator's own.
type stallEngine struct {
	*agent.SimEngine
	entered, released chan string
}

func (e *stallEngine) stall(ctx context.Context, what string) error {
	e.entered <- what
	<-ctx.Done()
	e.released <- what
	return ctx.Err()
}

func (e *stallEngine) Run(ctx context.Context, _ json.RawMessage, _ func(agent.TokenSample) error) (*sim.Result, error) {
	return nil, e.stall(ctx, "run")
}

func (e *stallEngine) Calibrate(ctx context.Context, _ json.RawMessage) ([]byte, error) {
	return nil, e.stall(ctx, "calibrate")
}

// startStallAgent serves a stallEngine of the default device (the default
// model loaded) on a loopback port until the test ends, and writes the
// simulator's calibrated profile to profile.
func startStallAgent(t *testing.T, profile string) (target, token string, e *stallEngine) {
	t.Helper()
	p, err := devices.LoadProfile(defaultDevice)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := agent.NewSimEngine(p, version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.LoadModel(context.Background(), "qwen3-30b-a3b"); err != nil {
		t.Fatal(err)
	}
	y, err := sim.Calibrate(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(profile, y, 0o644); err != nil {
		t.Fatal(err)
	}
	e = &stallEngine{SimEngine: sim, entered: make(chan string, 1), released: make(chan string, 1)}
	token, _ = agent.NewToken()
	ln, err := agent.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&agent.Server{Engine: e, Token: token, Agent: "stall test"}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "tcp://" + ln.Addr().String(), token, e
}

// startMain runs lessim's main (signal handler included) with args in dir,
// as a child process of the test binary.
func startMain(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(args, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &stderr
}

// waitFor fails the test unless ch delivers within a minute.
func waitFor[T any](t *testing.T, ch <-chan T, what string, stderr *bytes.Buffer) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s: nothing after a minute (stderr %q)", what, stderr.String())
	}
	var zero T
	return zero
}

// endedBy fails the test unless the process died of sig and its stderr,
// from the signal on, is the one line want.
func endedBy(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer, sig syscall.Signal, want string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	err := waitFor(t, done, "exit after "+sig.String(), stderr)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("lessim ended with %v (stderr %q), want death by %v", err, stderr.String(), sig)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
		t.Errorf("lessim status %v, want killed by %v (a shell's $? = %d) (stderr %q)", ws, sig, 128+int(sig), stderr.String())
	}
	if got := stderr.String(); got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// TestInterruptLiveCalibrate: a SIGINT or SIGTERM to live --target and
// calibrate --target blocked on the agent ends them every time the same
// way: the agent sees the run cancelled (the connection shut down), the
// process dies of the signal (status 130, SIGTERM 143) with one line
// "lessim: interrupted…" on stderr and no "context canceled", and
// calibrate's --out keeps its old bytes with no temporary beside it.
func TestInterruptLiveCalibrate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs lessim processes")
	}
	dir := t.TempDir()
	target, token, eng := startStallAgent(t, filepath.Join(dir, "remote.yaml"))
	old := []byte("old profile\n")
	if err := os.WriteFile(filepath.Join(dir, "out.yaml"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stalls string
		sig          syscall.Signal
		want         string
		args         []string
	}{
		{"live", "run", syscall.SIGINT, "lessim: interrupted\n", []string{"live", "--policy", "lru", "--cache", "40%", "--tokens", "8"}},
		{"calibrate", "calibrate", syscall.SIGINT, "lessim: interrupted\n", []string{"calibrate", "--out", "out.yaml"}},
		{"calibrate-term", "calibrate", syscall.SIGTERM, "lessim: interrupted (terminated)\n", []string{"calibrate", "--out", "out.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, stderr := startMain(t, dir, append(tc.args, "--target", target, "--token", token)...)
			if got := waitFor(t, eng.entered, tc.stalls, stderr); got != tc.stalls {
				t.Fatalf("the agent got a %s, want a %s", got, tc.stalls)
			}
			cmd.Process.Signal(tc.sig)
			waitFor(t, eng.released, "the agent's "+tc.stalls+" cancelled", stderr)
			endedBy(t, cmd, stderr, tc.sig, tc.want)
			sameFile(t, filepath.Join(dir, "out.yaml"), old)
			atomictest.NoTemporaries(t, dir)
		})
	}
}
