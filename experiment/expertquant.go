package experiment

import "github.com/lessim/lessim/devices"

// ExpertQuantError is Resolve's error when the run's model cannot be
// re-quantized to the spec's ExpertQuant: the model lacks what its expert
// matrices' shape needs, a row is not a whole number of the type's blocks,
// or the experts already have that type (Err wraps
// devices.ErrExpertQuantUnchanged then). Err says why.
type ExpertQuantError struct {
	Quant string
	Err   error
}

// Error names the type and says why.
func (e *ExpertQuantError) Error() string { return "expert_quant " + e.Quant + ": " + e.Err.Error() }

// Unwrap is the reason.
func (e *ExpertQuantError) Unwrap() error { return e.Err }

// withExpertQuant is m with its experts re-quantized as r says (m itself
// when r keeps the model's types).
func withExpertQuant(r *Spec, m *devices.ModelSpec) (*devices.ModelSpec, error) {
	if r.ExpertQuant == "" {
		return m, nil
	}
	q, err := m.WithExpertQuant(devices.QuantType(r.ExpertQuant))
	if err != nil {
		return nil, &ExpertQuantError{Quant: r.ExpertQuant, Err: err}
	}
	return q, nil
}
