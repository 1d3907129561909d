//go:build llamacpp

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/runtime/record"
)

// TestCalibrateEndToEnd calibrates on a small synthetic model (few samples) and
// simulates with the profile it wrote.
func TestCalibrateEndToEnd(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "lessim-cli-calibrate-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	defer os.RemoveAll(dir)
	runCLI(t, dir, "model", "synth", "--layers", "4", "--experts", "16", "--top-k", "4", "--hidden", "256",
		"--expert-ffn", "256", "--heads", "4", "--heads-kv", "2", "--head-dim", "64", "--quant", "q8_0", "--seed", "1", "--out", "small.gguf")
	out := runCLI(t, dir, "calibrate", "--model", "small.gguf", "--out", "host.yaml", "--lanes", "1,2", "--sizes", "64KiB,256KiB",
		"--samples", "3", "--reads", "4", "--tokens", "4", "--quiet", "--draft-model", "small.gguf")
	for _, want := range []string{"wrote host.yaml: device calibrated-", "flash: ", "memory: ", "decode (all in RAM, 1 thread): "} {
		if !strings.Contains(out, want) {
			t.Fatalf("calibrate output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "assumed") {
		t.Errorf("a synthesizable model should leave nothing assumed:\n%s", out)
	}
	p, err := devices.ParseProfileFile(filepath.Join(dir, "host.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []devices.Quantity{p.Memory.RAM, p.Memory.Bandwidth, p.Memory.Efficiency, p.Compute.FLOPS, p.Compute.LayerOverhead,
		p.Flash.Lanes, p.Flash.Latency, p.Flash.PageSize, p.Flash.ReadAhead, p.Flash.FaultCost} {
		if !strings.HasPrefix(q.Source, "measured by lessim calibrate on ") || !strings.Contains(q.Source, "sample") || !strings.Contains(q.Source, "IQR") {
			t.Errorf("source %q lacks host, sample count or spread", q.Source)
		}
	}
	// Every format calibrate times is in memory.format_efficiency, measured, or
	// the profile's header says why not (a format's own time can come out too
	// short to charge at this noise: not a failure).
	y, _ := os.ReadFile(filepath.Join(dir, "host.yaml"))
	for _, f := range []string{"Q8_0", "Q4_K", "Q3_K", "MXFP4"} {
		q, ok := p.Memory.FormatEfficiency[f]
		if !ok && !strings.Contains(string(y), "# Format "+f+": ") {
			t.Errorf("format %s: neither an efficiency nor why not:\n%s", f, y)
		}
		if ok && !strings.HasPrefix(q.Source, "measured by lessim calibrate on ") {
			t.Errorf("format %s: source %q", f, q.Source)
		}
	}
	if len(p.Flash.SingleLane) != 2 || len(p.Flash.Aggregate) != 2 || p.Flash.Aggregate[0].Lanes != "2" {
		t.Errorf("curves %+v / %+v: want 2 sizes each, aggregate at 2 lanes", p.Flash.SingleLane, p.Flash.Aggregate)
	}
	sim := runCLI(t, dir, "simulate", "--tokens", "40", "--device-file", "host.yaml", "--cache", "3GiB")
	if !strings.Contains(sim, "device  calibrated-") || strings.Contains(sim, "lessim: ") {
		t.Errorf("simulate --device-file host.yaml:\n%s", sim)
	}
	// The draft model's time per draft token is measured, and a model
	// drafter of its bytes is charged it.
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	bytes, _, err := record.DraftCost(filepath.Join(dir, "small.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if d.DraftBytes != bytes || d.DraftTokenNS <= 0 || !strings.HasPrefix(p.Compute.DraftToken.Source, "measured by lessim calibrate on ") {
		t.Fatalf("draft model: %d B (want %d), %d ns per draft token, source %q", d.DraftBytes, bytes, d.DraftTokenNS, p.Compute.DraftToken.Source)
	}
	spec := []string{"simulate", "--tokens", "40", "--device-file", "host.yaml", "--cache", "3GiB", "--spec-block", "2", "--drafter", "model", "--format", "json", "--drafter-bytes"}
	draftNS := func(b int64) int64 {
		var o struct {
			Result struct {
				DraftNS int64 `json:"draft_ns"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(runCLI(t, dir, append(spec, fmt.Sprint(b)+"B")...)), &o); err != nil || o.Result.DraftNS <= 0 {
			t.Fatalf("simulate --drafter model --drafter-bytes %d: %v, draft %d ns", b, err, o.Result.DraftNS)
		}
		return o.Result.DraftNS
	}
	if m, o := draftNS(bytes), draftNS(bytes+1); m%d.DraftTokenNS != 0 || m == o {
		t.Errorf("draft time %d ns with the measured drafter (%d ns per draft token), %d ns with another", m, d.DraftTokenNS, o)
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 2 {
		t.Errorf("folder holds %d files, want the model and the profile", len(es))
	}
}

// TestCalibrateBadInput: bad options are one clear error listing every problem,
// before anything is measured.
func TestCalibrateBadInput(t *testing.T) {
	dir := t.TempDir()
	golden(t, "err-calibrate-options", runCLI(t, dir, "calibrate", "--model", "m.gguf", "--out", "host.yaml", "--lanes", "2,1", "--sizes", "1000B,64KiB"))
	golden(t, "err-calibrate-lanes", runCLI(t, dir, "calibrate", "--model", "m.gguf", "--out", "host.yaml", "--lanes", "two"))
	out := runCLI(t, dir, "calibrate", "--model", "missing.gguf", "--out", "host.yaml")
	if !strings.Contains(out, "lessim: ") || !strings.Contains(out, "missing.gguf") {
		t.Errorf("missing model: %s", out)
	}
	if out := runCLI(t, dir, "calibrate", "--model", "missing.gguf", "--draft-model", "nodraft.gguf", "--out", "host.yaml"); !strings.Contains(out, "--draft-model: ") || !strings.Contains(out, "nodraft.gguf") {
		t.Errorf("missing draft model: %s", out)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("left behind: %v", es)
	}
	// A file that is not a GGUF is refused before anything is measured.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := runCLI(t, dir, "calibrate", "--model", "notes.txt", "--out", "host.yaml"); out != "lessim: model: notes.txt: not a GGUF file (magic \"note\")\n" {
		t.Errorf("calibrate --model notes.txt: %q", out)
	}
}
