package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// SimEngine is an Engine that runs lessim's simulator on a device profile:
// a run simulates a synthetic trace and streams each decode pass as a
// TokenSample. It is not a stand-in: its results equal `lessim simulate`.
type SimEngine struct {
	profile *devices.Profile
	dev     *devices.Device
	version string

	// Playback > 0 paces the stream: each sample is sent when the simulated
	// device would have finished that pass, with simulated time divided by
	// Playback (1 = the device's own speed). 0 sends as fast as possible.
	Playback float64

	mu    sync.Mutex
	model string // loaded model, NAME or NAME:VARIANT: the default of runs that name none
}

var _ Engine = (*SimEngine)(nil)

// NewSimEngine returns an engine simulating the device profile p, reporting
// version as its engine version.
func NewSimEngine(p *devices.Profile, version string) (*SimEngine, error) {
	d, err := p.Device()
	if err != nil {
		return nil, err
	}
	return &SimEngine{profile: p, dev: d, version: version}, nil
}

// Facts describes the simulated device.
func (e *SimEngine) Facts() DeviceFacts {
	page := e.dev.Flash.PageBytes
	if page <= 0 || page&(page-1) != 0 {
		page = 4096
	}
	return DeviceFacts{
		Kind: KindSimulated, Model: e.dev.Name, OS: "simulated (" + clip(e.profile.Description, 200) + ")",
		CPU:      fmt.Sprintf("simulated, %.3g TFLOP/s sustained", e.dev.ComputeFLOPS/1e12),
		RAMBytes: e.dev.RAMBytes, PageBytes: page,
		Engine: "lessim-sim", EngineVersion: e.version,
	}
}

// LoadModel selects a built-in model spec, "NAME" or "NAME:VARIANT", as the
// default model of later runs.
func (e *SimEngine) LoadModel(ctx context.Context, model string) (ModelInfo, error) {
	name, variant, _ := strings.Cut(model, ":")
	m, err := devices.LookupModel(name, variant)
	if err != nil {
		return ModelInfo{}, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	if err := ctx.Err(); err != nil {
		return ModelInfo{}, err
	}
	e.mu.Lock()
	e.model = model
	e.mu.Unlock()
	return ModelInfo{Name: m.Name + " (" + m.Variant + ")", Arch: m.Arch, Layers: len(m.Layers), Experts: m.Experts, TopK: m.TopK,
		TotalExpertBytes: m.TotalExpertBytes()}, nil
}

// Calibrate returns the simulated device's profile: for a simulated device
// the profile is the calibration. It takes no options.
func (e *SimEngine) Calibrate(ctx context.Context, options json.RawMessage) ([]byte, error) {
	if len(options) > 0 {
		var v struct{}
		if err := decodeStrict(options, &v); err != nil {
			return nil, fmt.Errorf("%w: the simulator's calibration takes no options: %v", ErrInvalidSpec, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return e.profile.YAML()
}

// Run simulates spec (decodeSimSpec), emits one sample per decode pass
// (paced by Playback) and returns simulate's Result without its per-pass
// series (the samples carry it).
func (e *SimEngine) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	r, err := decodeSimSpec(spec, e.dev, e.loaded())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := r.Run()
	if err != nil {
		return nil, err
	}
	res := out.Result
	start := time.Now()
	for i, p := range res.Series {
		if err := e.pace(ctx, start, p.StartNS+p.TimeNS); err != nil {
			return nil, err
		}
		if err := emit(TokenSample{Pass: int64(i), Tokens: p.Accepted, StartNS: p.StartNS, TimeNS: p.TimeNS, StallNS: p.StallNS}); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Series = nil
	return res, nil
}

func (e *SimEngine) loaded() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.model
}

// pace waits until simulated time simNS ÷ Playback has passed since start.
func (e *SimEngine) pace(ctx context.Context, start time.Time, simNS int64) error {
	if e.Playback <= 0 || math.IsNaN(e.Playback) || math.IsInf(e.Playback, 0) {
		return ctx.Err()
	}
	wait := time.Until(start.Add(time.Duration(float64(simNS) / e.Playback)))
	if wait <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait): // NB: collected when it is not fired (Go 1.23)
		return nil
	}
}

var _ Recorder = (*SimEngine)(nil)

// Record returns the routing a run of tokens decode tokens simulates by
// default: the loaded model's synthetic trace of experiment.DefaultSynthetic.
func (e *SimEngine) Record(ctx context.Context, tokens int) ([]byte, error) {
	model := e.loaded()
	if model == "" {
		return nil, fmt.Errorf("%w: no model loaded (load_model first)", ErrInvalidSpec)
	}
	if tokens < 1 || tokens > MaxSimTokens {
		return nil, fmt.Errorf("%w: tokens %d: want 1..%d", ErrInvalidSpec, tokens, MaxSimTokens)
	}
	name, variant, _ := strings.Cut(model, ":")
	m, err := devices.LookupModel(name, variant)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	o := experiment.DefaultSynthetic().Options()
	o.Tokens = tokens
	meta, src, err := traces.SynthSource(m, o)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := traces.Encode(&buf, meta, ctxSource{ctx, src}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ctxSource is a trace source that ends with ctx's error when ctx is done.
type ctxSource struct {
	ctx context.Context
	traces.Source
}

func (s ctxSource) Next() bool { return s.ctx.Err() == nil && s.Source.Next() }
func (s ctxSource) Err() error { return cmp.Or(s.ctx.Err(), s.Source.Err()) }

// MaxSimTokens bounds a SimEngine run's synthetic trace, decode and prompt
// tokens over all sequences (memory grows with tokens × layers × experts).
const MaxSimTokens = 4096

// errNoFiles is what an agent answers a spec naming a file: an agent runs
// nothing but its engine, so it reads no trace or profile a client names.
var errNoFiles = errors.New("an agent runs nothing but its engine: it reads no files a client names (use a synthetic trace and the agent's own device)")

// decodeSimSpec resolves raw, an experiment.Spec, for a SimEngine
// simulating dev with model loaded (agentSpec); a device the spec names
// must be dev. Errors wrap ErrInvalidSpec.
func decodeSimSpec(raw json.RawMessage, dev *devices.Device, model string) (*experiment.Plan, error) {
	s, err := agentSpec(raw, dev.Name, model)
	switch y, d := s.Trace.Synthetic, s.Device; {
	case err != nil:
	case s.Trace.Path != "" || d.File != "":
		err = errNoFiles
	case y != nil && int64(y.Tokens+y.PromptTokens)*int64(max(y.Sequences, 1)) > MaxSimTokens:
		err = fmt.Errorf("trace.synthetic: %d tokens (with the prompt) × %d sequences: an agent runs at most %d", y.Tokens+y.PromptTokens, max(y.Sequences, 1), MaxSimTokens)
	case d.Profile != nil && !reflect.DeepEqual(d.Profile, dev):
		err = fmt.Errorf("device: the spec carries a profile of %s that is not this agent's (%s): an agent runs only its own device", d.Profile.Name, dev.Name)
	case d.Profile == nil && d.Name != dev.Name:
		err = fmt.Errorf("device: this agent simulates %s; the spec asks for %s", dev.Name, d.Name)
	}
	var p *experiment.Plan
	if err == nil {
		in := experiment.Inputs{
			ReadTrace:  func(string) (*experiment.LoadedTrace, error) { return nil, errNoFiles },
			LoadDevice: func(string, string) (*devices.Device, error) { return dev, nil },
		}
		p, err = in.Resolve(s)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	p.Config.KeepSeries = true
	return p, nil
}

// agentSpec parses raw as experiment.Parse does, except that an absent
// model is the loaded model and an absent device the agent's.
func agentSpec(raw json.RawMessage, device, model string) (experiment.Spec, error) {
	s, named, err := experiment.ParseNamed(raw)
	if err != nil {
		return s, err
	}
	if !named("device") {
		s.Device = experiment.Device{Name: device}
	}
	if !named("model") && s.Trace.Path == "" {
		if model == "" {
			return s, errors.New("no model: name one in the spec or load one first")
		}
		name, variant, _ := strings.Cut(model, ":")
		s.Model = &experiment.Model{Name: name, Variant: variant}
	}
	return s, nil
}
