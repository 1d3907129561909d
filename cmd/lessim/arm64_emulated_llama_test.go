//go:build llamacpp && linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/traces"
)

// arm64Env names the arm64 lessim binary (make build-arm64's
// bin/lessim-linux-arm64) that TestEmulatedARM64Agent runs under
// qemu-aarch64-static; make test-arm64 sets it.
const arm64Env = "LESSIM_ARM64_BIN"

// TestEmulatedARM64Agent: the statically linked arm64 build, run by qemu's
// user-mode emulator as it would run from an adb shell, serves `lessim agent
// --model tiny.gguf`: every conformance check passes over TCP loopback, and
// the same runs on the arm64 agent and on this build's agent (amd64, the
// same synthetic model) route every token to the same experts (see
// sameRouting) and count the same hits and misses. Timings under emulation say nothing about a phone.
func TestEmulatedARM64Agent(t *testing.T) {
	bin := os.Getenv(arm64Env)
	if bin == "" {
		t.Skip(arm64Env + " is not set: make test-arm64 builds the arm64 binary and runs this test under qemu-aarch64-static")
	}
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		t.Fatalf("%s is set but qemu-aarch64-static is not installed (make test-arm64 installs Debian's qemu-user-static): %v", arm64Env, err)
	}
	t.Log("timings under emulation are meaningless: this test compares routing, hits and misses, never speed")
	dir, addr, token := serveLiveAgent(t, "lessim-arm64-", "4", 0)
	native := "tcp://" + addr
	emulated := startEmulatedAgent(t, qemu, bin, filepath.Join(dir, "tiny.gguf"), token)
	ctx := context.Background()

	res := agent.Check(ctx, emulated, token, agent.CheckOptions{CancelWithin: 10 * time.Second, Client: agent.Options{Silence: time.Minute}}, nil)
	if len(res) < 12 {
		t.Errorf("%d checks ran", len(res))
	}
	for _, r := range res {
		if r.Outcome != agent.CheckPass {
			t.Errorf("check %q on the emulated arm64 agent: %s: %s", r.Name, r.Outcome, r.Detail)
		}
	}

	c, err := agent.Dial(ctx, emulated, token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if f := c.Facts(); !strings.HasPrefix(f.CPU, "arm64") || f.Kind != agent.KindMeasured || f.MemAvailableBytes <= 0 || f.CoreMaxMHz == "" || f.PageBytes < 4096 {
		t.Fatalf("the emulated agent is not the arm64 live engine: %+v", f)
	}
	n, err := agent.Dial(ctx, native, token)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	armTrace, err := c.Record(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	nativeTrace, err := n.Record(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	sameRouting(t, armTrace.Parquet, nativeTrace.Parquet)

	// The deterministic policies (demand loads only; see
	// TestLiveTargetEquivalence): the counts follow from the routing.
	for _, pc := range []struct{ policy, cache string }{{"lru", "40%"}, {"ondemand", "25%"}} {
		spec := json.RawMessage(`{"policy": {"name": "` + pc.policy + `"}, "cache": {"size": "` + pc.cache + `"}, "trace": {"synthetic": {"tokens": 8}}}`)
		arm, err := c.Run(ctx, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		nat, err := n.Run(ctx, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := counts(arm), counts(nat); a != b || arm.Misses == 0 {
			t.Errorf("%s %s counts differ:\narm64 %s\namd64 %s", pc.policy, pc.cache, a, b)
		}
	}
}

// sameRouting checks that two recorded traces select the same experts for
// every token and layer. NB: the rank order within a selection may differ
// where two gate weights nearly tie (ggml's NEON and AVX2 kernels sum in
// different orders); it may differ nowhere else.
func sameRouting(t *testing.T, a, b []byte) {
	t.Helper()
	ra, rb := selections(t, a), selections(t, b)
	if len(ra) == 0 || len(ra) != len(rb) {
		t.Fatalf("%d and %d selections", len(ra), len(rb))
	}
	reordered := 0
	for i := range ra {
		x, y := ra[i], rb[i]
		if x.at != y.at || !slices.Equal(sorted(x.experts), sorted(y.experts)) {
			t.Errorf("%s: arm64 selects %v, amd64 %s %v", x.at, x.experts, y.at, y.experts)
			continue
		}
		for k := range x.experts {
			if x.experts[k] != y.experts[k] {
				reordered++
				if math.Abs(float64(x.weights[k]-y.weights[k])) > 1e-3 || math.Abs(float64(x.weights[k]-x.weights[slices.Index(x.experts, y.experts[k])])) > 1e-3 {
					t.Errorf("%s: ranks differ without a tie: arm64 %v %v, amd64 %v %v", x.at, x.experts, x.weights, y.experts, y.weights)
				}
			}
		}
	}
	t.Logf("routing: %d selections identical as sets; %d ranks swapped at near-ties", len(ra), reordered)
}

type selection struct {
	at      string // seq/pos/layer
	experts []int32
	weights []float32
}

func selections(t *testing.T, b []byte) []selection {
	t.Helper()
	r, err := traces.NewReader(bytes.NewReader(b), "trace")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []selection
	for r.Next() {
		s := r.Step()
		for l, ls := range s.Layers {
			if len(ls.Weights) != len(ls.Experts) {
				t.Fatalf("%d/%d/%d: %d weights for %d experts", s.Seq, s.Pos, l, len(ls.Weights), len(ls.Experts))
			}
			out = append(out, selection{fmt.Sprintf("%d/%d/%d", s.Seq, s.Pos, l), slices.Clone(ls.Experts), slices.Clone(ls.Weights)})
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sorted(s []int32) []int32 { s = slices.Clone(s); slices.Sort(s); return s }

// startEmulatedAgent runs `qemu-aarch64-static BIN agent --model MODEL` on
// a free loopback port with token until the test ends, and returns its
// target.
func startEmulatedAgent(t *testing.T, qemu, bin, model, token string) string {
	t.Helper()
	cmd := exec.Command(qemu, bin, "agent", "--model", model, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), tokenEnv+"="+token)
	// Killed with the test process, should that die at its timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("the emulated agent did not stop within 30 s of an interrupt")
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), " on tcp://"); ok {
				found <- "tcp://" + a
			}
		}
		close(found)
	}()
	select {
	case target, ok := <-found:
		if !ok {
			t.Fatalf("the emulated agent exited without serving:\n%s", stderr.String())
		}
		return target
	case <-time.After(2 * time.Minute):
		t.Fatalf("the emulated agent did not start within 2 minutes:\n%s", stderr.String())
	}
	return ""
}
