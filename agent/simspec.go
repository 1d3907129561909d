package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
)

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
