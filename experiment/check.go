package experiment

import (
	"errors"
	"fmt"

	"github.com/lessim/lessim/devices"
)

// CheckInputs reports whether the inputs s names can be found, through the
// code Resolve finds them with, without loading or generating a trace: its
// device (an embedded profile, or a profile file parsed and checked), the
// built-in model and variant of a synthetic trace, and its trace file
// (opened, its schema and metadata read). lessim sweep checks every point
// with it before any point runs, so a misspelt name is a problem of the
// sweep file, not a failed row per point. Each distinct device, model and
// trace file is checked once per Inputs (the answer is kept). A name that
// Validate already refuses as missing is not checked again (one problem, one
// message).
func (in *Inputs) CheckInputs(s Spec) error {
	var errs []error
	if d := s.Device; d.Profile == nil && (d.Name != "" || d.File != "") {
		errs = append(errs, in.checkOnce(d, func() error {
			r := Spec{Device: d}
			_, err := in.resolveDevice(&r)
			return err
		}))
	}
	if p := s.Trace.Path; p != "" {
		errs = append(errs, in.checkOnce("trace\x00"+p, func() error {
			if _, _, err := traceFootprint(p); err != nil {
				return fmt.Errorf("trace: %w", err)
			}
			return nil
		}))
	} else if m := s.Model; m != nil && m.Name != "" {
		errs = append(errs, in.checkOnce(*m, func() error {
			_, err := devices.LookupModel(m.Name, m.Variant)
			return err
		}))
	}
	return errors.Join(errs...)
}

// checkOnce runs check the first time key is seen and keeps its answer.
func (in *Inputs) checkOnce(key any, check func() error) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err, ok := in.checked[key]; ok {
		return err
	}
	err := check()
	if in.checked == nil {
		in.checked = map[any]error{}
	}
	in.checked[key] = err
	return err
}
