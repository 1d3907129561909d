package fit

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// Param is one parameter to fit: a positive number with bounds.
type Param struct {
	Name     string
	Start    float64 // starting value, within [Min, Max]
	Min, Max float64 // bounds, 0 < Min <= Max
}

// Fitted is one parameter's outcome.
type Fitted struct {
	Name       string
	Value      float64
	SE         float64 // standard error; 0 when not identified (never NaN or Inf)
	Identified bool    // false: the data do not constrain it; Value = Start
	Why        string  // why not identified
}

// Outcome is a least-squares fit's result.
type Outcome struct {
	Params    []Fitted
	Residuals []float64 // measured − predicted at the optimum
	RMS       float64
	Evals     int
}

// Model predicts one value per measurement from parameter values (in Param order).
type Model func(p []float64) ([]float64, error)

// LeastSquares fits params so that model's predictions match measured in
// the least-squares sense. It searches in log space (bounds by clamping) with
// Nelder–Mead, which needs no derivatives of the simulator, then estimates
// standard errors from a central-difference Jacobian in log space.
func LeastSquares(model Model, measured []float64, params []Param, maxEvals int) (*Outcome, error) {
	if len(params) == 0 {
		return nil, errors.New("fit: no parameters")
	}
	for _, p := range params {
		if !(p.Min > 0 && p.Min <= p.Start && p.Start <= p.Max) || math.IsInf(p.Max, 0) {
			return nil, fmt.Errorf("fit: parameter %s: need 0 < min <= start <= max < inf (got %g, %g, %g)", p.Name, p.Min, p.Start, p.Max)
		}
	}
	toValues := func(z []float64) []float64 { return clampExp(z, params) }
	var modelErr error
	evals := 0
	sse := func(z []float64) float64 {
		evals++
		pred, err := model(toValues(z))
		if err != nil {
			// NB: an infeasible point (e.g. a profile the bounds refuse) is
			// just a bad point; the fit fails only if the optimum is infeasible.
			modelErr = err
			return math.Inf(1)
		}
		if len(pred) != len(measured) {
			modelErr = fmt.Errorf("fit: model gave %d predictions for %d measurements", len(pred), len(measured))
			return math.Inf(1)
		}
		var s float64
		for i := range pred {
			r := measured[i] - pred[i]
			s += r * r
		}
		return s
	}
	z0 := make([]float64, len(params))
	for i, p := range params {
		z0[i] = math.Log(p.Start)
	}
	prob := optimize.Problem{Func: sse}
	settings := &optimize.Settings{FuncEvaluations: maxEvals, Converger: &optimize.FunctionConverge{Absolute: 1e-12, Relative: 1e-9, Iterations: 40}}
	res, err := optimize.Minimize(prob, z0, settings, &optimize.NelderMead{SimplexSize: 0.3})
	if err != nil && res == nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	best := toValues(res.X)
	z := make([]float64, len(best)) // NB: res.X projected onto the bounds, which the search may have left
	for i, v := range best {
		z[i] = math.Log(v)
	}
	pred, err := model(best)
	if err != nil {
		if modelErr != nil && modelErr.Error() != err.Error() {
			return nil, fmt.Errorf("fit: the best point is infeasible: %w (an earlier point failed with: %v)", err, modelErr)
		}
		return nil, fmt.Errorf("fit: the best point is infeasible: %w", err)
	}
	out := &Outcome{Evals: evals}
	for i := range pred {
		out.Residuals = append(out.Residuals, measured[i]-pred[i])
		out.RMS += out.Residuals[i] * out.Residuals[i]
	}
	out.RMS = math.Sqrt(out.RMS / float64(len(pred)))
	out.Params, err = standardErrors(model, params, z, best, pred, out)
	return out, err
}

// standardErrors estimates each parameter's standard error from the
// Jacobian of the predictions with respect to log-parameters at z, where
// the values are best and the predictions pred.
func standardErrors(model Model, params []Param, z, best, pred []float64, out *Outcome) ([]Fitted, error) {
	n, k := len(pred), len(params)
	fitted := make([]Fitted, k)
	J := mat.NewDense(n, k, nil)
	for j, p := range params {
		col, err := derivative(model, params, z, pred, j)
		if err != nil {
			return nil, fmt.Errorf("fit: the standard error of %s: %w", p.Name, err)
		}
		J.SetCol(j, col)
	}
	dof := max(n-k, 1)
	s2 := out.RMS * out.RMS * float64(n) / float64(dof)
	// Parameters the predictions do not depend on are dropped before the
	// normal matrix is inverted.
	var live []int
	for j, p := range params {
		fitted[j] = Fitted{Name: p.Name, Value: best[j], Identified: true}
		if mat.Norm(J.ColView(j), 2) < 1e-12*math.Max(1, out.RMS) {
			fitted[j] = notIdentified(p, "the predictions do not depend on it in this run")
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return fitted, nil
	}
	Jl := mat.NewDense(n, len(live), nil)
	for c, j := range live {
		Jl.SetCol(c, mat.Col(nil, j, J))
	}
	var jtj, inv mat.Dense
	jtj.Mul(Jl.T(), Jl)
	invErr := inv.Inverse(&jtj)
	for c, j := range live {
		p := params[j]
		// d value = value · d z, so SE(value) = value · SE(z).
		se := best[j] * math.Sqrt(math.Max(s2*inv.At(c, c), 0))
		if invErr != nil || math.IsNaN(se) || math.IsInf(se, 0) {
			fitted[j] = notIdentified(p, "confounded with another parameter in this run (singular normal matrix)")
			continue
		}
		fitted[j].SE = se
		if best[j] <= p.Min*(1+1e-9) || best[j] >= p.Max*(1-1e-9) {
			fitted[j].Why = "at its bound"
		}
	}
	return fitted, nil
}

// notIdentified is p kept at its start, with the reason.
func notIdentified(p Param, why string) Fitted {
	return Fitted{Name: p.Name, Value: p.Start, Why: why}
}

// derivative is the predictions' derivative with respect to log-parameter
// j at z (predictions pred): a central difference over the step the bounds
// allow (one-sided at a bound), or a one-sided one when the model fails on
// one side (an infeasible neighbour is just not used).
func derivative(model Model, params []Param, z, pred []float64, j int) ([]float64, error) {
	const h = 1e-3
	var last error
	at := func(d float64) ([]float64, float64) {
		zz := slices.Clone(z)
		zz[j] += d
		v := clampExp(zz, params)
		p, err := model(v)
		if err == nil && len(p) != len(pred) {
			err = fmt.Errorf("the model gave %d predictions for %d measurements", len(p), len(pred))
		}
		if err != nil {
			last = err
			return nil, z[j]
		}
		return p, math.Log(v[j])
	}
	pp, zp := at(h)
	pm, zm := at(-h)
	switch {
	case pp == nil && pm == nil:
		return nil, fmt.Errorf("the model fails on both sides of the optimum: %w", last)
	case pp == nil:
		pp = pred
	case pm == nil:
		pm = pred
	}
	col := make([]float64, len(pred))
	if zp == zm {
		return col, nil // Min = Max: nothing to vary
	}
	for i := range col {
		col[i] = (pp[i] - pm[i]) / (zp - zm)
	}
	return col, nil
}

func clampExp(z []float64, params []Param) []float64 {
	v := make([]float64, len(z))
	for i, p := range params {
		v[i] = math.Min(math.Max(math.Exp(z[i]), p.Min), p.Max)
	}
	return v
}
