package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

func (k *checker) calibrate(ctx context.Context) (string, error) {
	if !slices.Contains(k.welcome.Capabilities, CapCalibrate) {
		return "", skipError(fmt.Sprintf("the agent does not announce %s (capabilities %v)", CapCalibrate, k.welcome.Capabilities))
	}
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var y []byte
	err = k.whenFree(func() error {
		var err error
		y, err = c.Calibrate(ctx, k.o.CalibrateOptions)
		return err
	})
	if err != nil {
		return "", err
	}
	p, err := devices.ParseProfile(y, "calibration")
	if err != nil {
		return "", err
	}
	d, err := p.Device()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("profile %q: %s RAM, %d flash lanes", p.Name, sim.FormatBytes(d.RAMBytes), d.Flash.Lanes), nil
}

// record asks for a short routing trace and checks it reads back, has the
// tokens asked for and describes a MoE model.
func (k *checker) record(ctx context.Context) (string, error) {
	if !slices.Contains(k.welcome.Capabilities, CapRecord) {
		return "", skipError(fmt.Sprintf("the agent does not announce %s (capabilities %v)", CapRecord, k.welcome.Capabilities))
	}
	n := k.o.RecordTokens
	if n <= 0 {
		n = 4
	}
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var t *RecordedTrace
	err = k.whenFree(func() error {
		var err error
		t, err = c.Record(ctx, n)
		return err
	})
	if err != nil {
		return "", err
	}
	m := t.Meta.Model
	if len(m.Layers) == 0 || m.TopK < 1 || m.Experts < m.TopK {
		return "", fmt.Errorf("the trace's model %q: %d MoE layers, top-%d of %d experts", m.Name, len(m.Layers), m.TopK, m.Experts)
	}
	return fmt.Sprintf("%d bytes: %d prefill + %d decode tokens of %s (%d MoE layers, top-%d of %d)",
		len(t.Parquet), t.PrefillTokens, t.DecodeTokens, m.Name, len(m.Layers), m.TopK, m.Experts), nil
}

// recordBad sends a record request of 0 tokens: a payload that does not
// validate, fatal bad_request whether or not the agent records.
func (k *checker) recordBad(ctx context.Context) (string, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeRecord, 1, Record{Tokens: 0}); err != nil {
		return "", err
	}
	return w.fatal(1, CodeBadRequest)
}
