package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lessim/lessim/sim"
)

// Engine is what an agent serves: the device's inference engine. The server
// calls at most one of LoadModel, Calibrate and Run at a time, and cancels
// the context when the client cancels or disconnects; an engine must then
// return promptly and leave nothing running.
type Engine interface {
	// Facts describes the device. It is called once per connection and must
	// not block.
	Facts() DeviceFacts
	// LoadModel loads the named model (the engine decides what names it
	// accepts) and makes it the model later runs use.
	LoadModel(ctx context.Context, model string) (ModelInfo, error)
	// Calibrate measures the device and returns a device profile as YAML.
	// options is engine-defined JSON (nil for the defaults).
	Calibrate(ctx context.Context, options json.RawMessage) (profileYAML []byte, err error)
	// Run runs the experiment spec (JSON, validated by the engine), calling
	// emit once per decode pass in pass order, and returns the run's Result.
	// An error from emit ends the run with that error. An engine that
	// announces CapSeries fills every sample's series fields (the server
	// removes them from the lines of a run that did not ask for them).
	Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error)
}

// Capable is an Engine that announces its own Capabilities (it must still
// answer a request it does not serve, with an error).
type Capable interface {
	Capabilities() []string
}

// Recorder is an Engine that also records routing: the record request.
type Recorder interface {
	// Record decodes tokens greedy tokens after the prompt the engine's
	// runs use and returns the routing as a lessim trace file (Parquet
	// bytes): the routing its runs of that many tokens see.
	Record(ctx context.Context, tokens int) (trace []byte, err error)
}

// capabilities are what the agent announces for e.
func capabilities(e Engine) []string {
	if c, ok := e.(Capable); ok {
		return c.Capabilities()
	}
	caps := []string{CapLoadModel, CapCalibrate, CapRun, CapCancel}
	if _, ok := e.(Recorder); ok {
		caps = append(caps, CapRecord)
	}
	return caps
}

// errNoRecord answers record on an engine that is not a Recorder.
var errNoRecord = fmt.Errorf("%w: this agent's engine does not record routing (capability %s absent)", ErrInvalidSpec, CapRecord)

// ErrInvalidSpec marks an engine error caused by the request itself: the
// client sees code invalid_spec rather than engine.
var ErrInvalidSpec = errors.New("invalid request")

func errorCode(err error) string {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CodeCancelled
	case errors.Is(err, ErrInvalidSpec):
		return CodeInvalidSpec
	}
	return CodeEngine
}

// CapHost is what an engine running in its caller's process can do and no
// agent announces: take a spec's host group (experiment.Host: this
// machine's model file, prompt, lanes and threads).
const CapHost = "host"

// Supports says why engine e cannot serve what needs caps (nil when it
// can): the one place where what a remote engine cannot do is refused.
func Supports(e Engine, caps ...string) error {
	have := capabilities(e)
	c, remote := e.(*Client)
	if !remote {
		have = append(have, CapHost)
	}
	for _, cp := range caps {
		switch {
		case slices.Contains(have, cp):
		case remote && cp == CapSeries:
			return fmt.Errorf("%s measures no per-token series (capabilities %v, no %s; a live engine agent has it)", c.target, have, CapSeries)
		default:
			return fmt.Errorf("%w: the engine cannot serve it (capability %s absent)", ErrInvalidSpec, cp)
		}
	}
	return nil
}

// RecordOn records the routing of tokens greedy decode tokens on e and
// returns the trace, checked (CheckTrace).
func RecordOn(ctx context.Context, e Engine, tokens int) (*RecordedTrace, error) {
	switch r := e.(type) {
	case *Client:
		return r.Record(ctx, tokens)
	case Recorder:
		b, err := r.Record(ctx, tokens)
		if err != nil {
			return nil, err
		}
		return CheckTrace(b, tokens)
	}
	return nil, errNoRecord
}

// RunSeriesOn runs spec on e as Engine.Run does and returns its samples
// with every series field (on an agent the run asks for them, Run.Series).
func RunSeriesOn(ctx context.Context, e Engine, spec json.RawMessage) (*sim.Result, []TokenSample, error) {
	if err := Supports(e, CapSeries); err != nil {
		return nil, nil, err
	}
	run := e.Run
	if c, ok := e.(*Client); ok {
		run = func(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
			return c.run(ctx, Run{Spec: spec, Series: true}, emit)
		}
	}
	var samples []TokenSample
	res, err := run(ctx, spec, func(s TokenSample) error { samples = append(samples, s); return nil })
	if err != nil {
		return nil, nil, err
	}
	return res, samples, nil
}
