package experiment

import (
	"errors"
	"fmt"
	"math"
	"reflect"

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
	res, err := p.simulate(p.Config, pol)
	if err != nil {
		return nil, err
	}
	if err := checkFinite(res); err != nil {
		return nil, err
	}
	res.Warnings = append(res.Warnings, p.Warnings...)
	return &Outcome{Spec: p.Spec, Hash: p.Spec.Hash(), TraceLabel: p.TraceLabel, Model: p.Model, Device: p.Device, Result: res}, nil
}

// RunOn simulates the plan on device d instead of its own, keeping the
// per-pass series: how package fit tries candidate profiles on the plan of
// a measured run. The cache stays the plan's bytes and the plan's warnings
// are not added.
func (p *Plan) RunOn(d *devices.Device) (*sim.Result, error) {
	pol, err := policies.New(p.Spec.Policy.Name, p.Params)
	if err != nil {
		return nil, err
	}
	cfg := p.Config
	cfg.Device, cfg.KeepSeries = d, true
	return p.simulate(cfg, pol)
}

// simulate runs the engine with cfg on the steps in memory, or streams the
// trace file (sim.RunSource: one pass at a time; a corrupt row ends the run
// with the file, row and reason).
func (p *Plan) simulate(cfg sim.Config, pol sim.Policy) (*sim.Result, error) {
	if p.stream == nil {
		return sim.Run(cfg, p.Steps, pol)
	}
	src, c, err := p.openStream()
	if err != nil {
		return nil, err
	}
	res, err := sim.RunSource(cfg, src, pol)
	return res, errors.Join(err, c.Close())
}

// Streamed reports whether the run streams its trace (a file, or a
// synthetic trace generated as it goes) rather than reading steps held in
// memory (Steps is nil then).
func (p *Plan) Streamed() bool { return p.stream != nil }

// TraceSteps is the number of steps of the run's trace (prefill included).
func (p *Plan) TraceSteps() int64 {
	if p.stream != nil {
		return p.stream.steps
	}
	return int64(len(p.Steps))
}

// Run resolves s with fresh Inputs and runs it.
func Run(s Spec) (*Outcome, error) {
	var in Inputs
	return in.Run(s)
}

// Run resolves s with in (sharing what in has loaded) and runs it.
func (in *Inputs) Run(s Spec) (*Outcome, error) {
	p, err := in.Resolve(s)
	if err != nil {
		return nil, err
	}
	return p.Run()
}

// checkFinite refuses a result with a NaN or infinite number: no run may
// end in a number that is not one (inputs are checked, so this is a bug).
func checkFinite(r *sim.Result) error {
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Float64 && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)) {
			return fmt.Errorf("result %s is %v: a bug in lessim, please report it with the spec", v.Type().Field(i).Name, f.Float())
		}
	}
	return nil
}
