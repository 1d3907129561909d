//go:build llamacpp && linux

package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/runtime/calibrate"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// MaxLiveTokens bounds a LiveEngine run's decode tokens.
const MaxLiveTokens = 4096

// LiveEngine is an Engine that runs llama.cpp on this machine (runtime/live)
// with the GGUF model it was started with: a run decodes greedily while the
// spec's policy manages an expert cache. It calibrates and records as
// lessim calibrate and record do.
type LiveEngine struct {
	path    string
	model   *devices.ModelSpec
	version string
	facts   DeviceFacts

	// Threads and Lanes are live.Options' compute threads and I/O lanes
	// (0 = live's defaults: 1 thread, 2 lanes); Prompt is the text its runs
	// and records prefill ("" = live.DefaultPrompt). A spec's host group
	// overrides them on a Local engine.
	Threads, Lanes int
	Prompt         string
	// Local is set when the engine runs in its caller's process: a spec may
	// then carry a host group (its model file the engine's), nothing is
	// bounded for an agent's client, and errors are not wrapped for one.
	Local bool
	// Log, when set, is told how a calibration goes (runtime/calibrate's
	// progress lines); Calibrated, when set, is handed its whole result.
	Log        io.Writer
	Calibrated func(*calibrate.Result)
}

var _ Engine = (*LiveEngine)(nil)

// NewLiveEngine returns a live engine serving the MoE GGUF at path.
func NewLiveEngine(path, version string) (*LiveEngine, error) {
	mc, err := record.CheckModel(path)
	if err != nil {
		return nil, err
	}
	mc.File.Close()
	return &LiveEngine{path: path, model: mc.Spec, version: version, facts: hostFacts(version)}, nil
}

// hostFacts describes this machine.
func hostFacts(version string) DeviceFacts {
	h, cpus := calibrate.ReadHost(), runtime.NumCPU()
	return DeviceFacts{
		Kind: KindMeasured, Model: clip(h.Name, 200), OS: clip(h.OS, 200),
		CPU:   fmt.Sprintf("%s, %d logical CPUs", runtime.GOARCH, cpus),
		Cores: cpus, RAMBytes: h.RAMBytes, PageBytes: int64(os.Getpagesize()),
		Engine: "llama.cpp (lessim live)", EngineVersion: version,
		CoreMaxMHz: calibrate.CoreMaxMHz("/"),
	}
}

// Capabilities are every request, and per-token series.
func (e *LiveEngine) Capabilities() []string {
	return []string{CapLoadModel, CapCalibrate, CapRun, CapCancel, CapRecord, CapSeries}
}

// Facts describes this machine, with its memory available and temperatures now.
func (e *LiveEngine) Facts() DeviceFacts {
	f := e.facts
	f.MemAvailableBytes, f.Thermal = calibrate.MemAvailable("/"), calibrate.Thermal("/")
	return f
}

// LoadModel accepts only the model the engine was started with, by its file
// name or its model name: an agent loads nothing a client names.
func (e *LiveEngine) LoadModel(ctx context.Context, model string) (ModelInfo, error) {
	if model != filepath.Base(e.path) && model != e.model.Name {
		return ModelInfo{}, fmt.Errorf("%w: this agent serves %s (%s) only", ErrInvalidSpec, filepath.Base(e.path), e.model.Name)
	}
	if err := ctx.Err(); err != nil {
		return ModelInfo{}, err
	}
	m := e.model
	var size int64
	if st, err := os.Stat(e.path); err == nil {
		size = st.Size()
	}
	return ModelInfo{Name: m.Name, Arch: m.Arch, Layers: len(m.Layers), Experts: m.Experts, TopK: m.TopK,
		TotalExpertBytes: m.TotalExpertBytes(), FileBytes: size}, nil
}

// Run decodes the spec's tokens (liveOptions), emits one sample with every
// series field per decode token (start_ns sums the tokens' times before it:
// the residency sweep between tokens is outside them) and returns the
// measured Result.
func (e *LiveEngine) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	o, warn, err := e.liveOptions(spec)
	if err != nil && !e.Local {
		err = fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	if err != nil {
		return nil, err
	}
	var start, pass int64
	o.OnToken = func(s live.TokenSample) error {
		t := TokenSample{Pass: pass, Tokens: max(s.Tokens, 1), StartNS: start, TimeNS: s.WallNS, StallNS: s.StallNS,
			ReadBytes: ptr(s.BytesRead), Reads: ptr(s.Reads), Hits: ptr(s.Hits), Misses: ptr(s.Misses), ResidentBytes: ptr(s.ResidentBytes),
			ComputeNS: ptr(s.ComputeNS), InflightHits: ptr(s.InflightHits), PrefetchLoads: ptr(s.PrefetchLoads),
			MajorFaults: ptr(s.MajorFaults), StrayBytes: ptr(s.StrayBytes)}
		if o.Stock {
			t.ReadBytes, t.Reads = nil, nil // page faults: no reads issued
		}
		start += s.WallNS
		pass++
		return emit(t)
	}
	res, _, err := live.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	res.Warnings = append(res.Warnings, warn...)
	return res, nil
}

// liveOptions reads an experiment.Spec for this engine (applySpec): the
// device must be this machine's and the model the engine's.
func (e *LiveEngine) liveOptions(raw json.RawMessage) (live.Options, []string, error) {
	o := live.DefaultOptions()
	o.Model, o.Threads, o.Lanes, o.Prompt = e.path, max(e.Threads, 1), max(e.Lanes, 0), e.Prompt
	s, err := agentSpec(raw, e.facts.Model, e.model.Name)
	if err != nil {
		return o, nil, err
	}
	var bad []string
	refuse := func(cond bool, what string) {
		if cond {
			bad = append(bad, what)
		}
	}
	refuse(s.Trace.Path != "" || s.Device.File != "", errNoFiles.Error())
	refuse(s.Device.Profile != nil || s.Device.Name != e.facts.Model, "device: a live engine measures this machine ("+e.facts.Model+"); name it or leave device out")
	refuse(s.Model != nil && (s.Model.Name != e.model.Name || s.Model.Variant != "" && s.Model.Variant != e.model.Variant), "model: this agent serves "+e.model.Name)
	draft := ""
	if h := s.Host; h != nil {
		draft = h.DraftModel
		refuse(!e.Local, "host: an agent runs its own model, prompt, lanes and threads (leave the host group out)")
		refuse(h.ModelFile != e.path, "host.model_file "+h.ModelFile+": this engine runs "+e.path)
		o.Prompt, o.Lanes, o.Threads = cmp.Or(h.Prompt, o.Prompt), cmp.Or(h.Lanes, o.Lanes), cmp.Or(h.Threads, o.Threads)
	}
	o.EnsureDefaults()
	warn := applySpec(&o, &s, e.model, draft, refuse)
	refuse(o.Tokens > MaxLiveTokens && !e.Local, fmt.Sprintf("tokens %d: a live agent runs at most %d", o.Tokens, MaxLiveTokens))
	if len(bad) > 0 {
		return o, nil, errors.New(strings.Join(bad, "; "))
	}
	if err := s.Validate(); err != nil { // NB: after the engine's own words for what it refuses
		return o, nil, err
	}
	if err := o.Validate(); err != nil {
		return o, nil, err
	}
	return o, append(warn, live.RoutingNote), nil
}

var _ Recorder = (*LiveEngine)(nil)

// Bounds of an agent's calibrate options: a client may not make the agent
// measure for hours or allocate more than a few hundred MiB.
const (
	maxCalSamples  = 50
	maxCalReads    = 256
	maxCalTokens   = 512
	maxCalEntries  = 16
	maxCalMemBytes = 1 << 30
	maxCalReadSize = 64 << 20
)

// calibrateOptions decodes raw, calibrate.Options' measuring fields as JSON
// (nil or {} for the defaults), and bounds them on an agent.
func (e *LiveEngine) calibrateOptions(raw json.RawMessage) (calibrate.Options, error) {
	var o calibrate.Options
	if len(raw) > 0 {
		if err := decodeStrict(raw, &o); err != nil {
			return o, err
		}
	}
	if !e.Local && (o.Samples < 0 || o.Samples > maxCalSamples || o.Reads < 0 || o.Reads > maxCalReads || o.Tokens < 0 || o.Tokens > maxCalTokens ||
		len(o.Lanes) > maxCalEntries || len(o.Sizes) > maxCalEntries || o.MemBytes < 0 || o.MemBytes > maxCalMemBytes ||
		len(o.Sizes) > 0 && slices.Max(o.Sizes) > maxCalReadSize) {
		return o, fmt.Errorf("options out of range: samples 0..%d, reads 0..%d, tokens 0..%d, at most %d lanes and sizes, read sizes up to %d bytes, mem_bytes 0..%d",
			maxCalSamples, maxCalReads, maxCalTokens, maxCalEntries, maxCalReadSize, maxCalMemBytes)
	}
	if !e.Local && o.DraftModel != "" {
		return o, errors.New("draft_model: an agent opens no path a client sends")
	}
	o.Model = e.path
	o.EnsureDefaults()
	return o, nil
}

// Calibrate measures this machine on the engine's model as lessim
// calibrate --model does, in a temporary folder removed before returning.
func (e *LiveEngine) Calibrate(ctx context.Context, options json.RawMessage) ([]byte, error) {
	dir, err := os.MkdirTemp("", "lessim-agent-calibrate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	o, err := e.calibrateOptions(options)
	if err == nil {
		o.Out, o.Log = filepath.Join(dir, "profile.yaml"), e.Log
		err = o.Validate()
	}
	if err != nil && !e.Local {
		err = fmt.Errorf("%w: calibrate options: %v", ErrInvalidSpec, err)
	}
	if err != nil {
		return nil, err
	}
	r, err := calibrate.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	if e.Calibrated != nil {
		e.Calibrated(r)
	}
	return r.YAML, nil
}

// Record records the routing of tokens greedy decode tokens after the
// runs' prompt, without logits, in a temporary folder removed before
// returning, and returns the trace file's bytes.
func (e *LiveEngine) Record(ctx context.Context, tokens int) ([]byte, error) {
	if tokens < 1 || tokens > MaxLiveTokens {
		return nil, fmt.Errorf("%w: tokens %d: want 1..%d", ErrInvalidSpec, tokens, MaxLiveTokens)
	}
	dir, err := os.MkdirTemp("", "lessim-agent-record-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ro := record.DefaultOptions()
	ro.ModelPath, ro.Prompts, ro.PromptSet = e.path, []string{cmp.Or(e.Prompt, live.DefaultPrompt)}, "agent"
	if e.Local {
		ro.PromptSet = "validate"
	}
	ro.Tokens, ro.Temperature, ro.Threads, ro.Logits = tokens, 0, max(e.Threads, 1), false
	ro.Out = filepath.Join(dir, "trace.parquet")
	if _, err := record.Record(ctx, ro); err != nil {
		return nil, err
	}
	return os.ReadFile(ro.Out)
}
