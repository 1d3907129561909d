package experiment

import (
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
)

// Outcome is one run: the resolved spec that produced it, its hash, and the
// result (whose warnings include the plan's).
type Outcome struct {
	Spec       Spec
	Hash       string
	TraceLabel string
	Model      *devices.ModelSpec
	Device     *devices.Device
	Result     *sim.Result
}

// Run simulates the plan. Each call builds a fresh policy, so a plan may run
// more than once (and plans sharing Inputs may run concurrently).
func (p *Plan) Run() (*Outcome, error) {
	p.mu.Lock()
	pol := p.pol
	p.pol = nil
	p.mu.Unlock()
	if pol == nil {
		var err error
		if pol, err = policies.New(p.Spec.Policy.Name, p.Params); err != nil {
			return nil, err
		}
	}
	res, err := sim.Run(p.Config, p.Steps, pol)
	if err != nil {
		return nil, err
	}
	res.Warnings = append(res.Warnings, p.Warnings...)
	return &Outcome{Spec: p.Spec, Hash: p.Spec.Hash(), TraceLabel: p.TraceLabel, Model: p.Model, Device: p.Device, Result: res}, nil
}

// Run resolves s with fresh Inputs and runs it.
func Run(s Spec) (*Outcome, error) {
	var in Inputs
	p, err := in.Resolve(s)
	if err != nil {
		return nil, err
	}
	return p.Run()
}
