package fit

import (
	"errors"
	"fmt"
	"math"

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
	SE         float64 // standard error (NaN when not identifiable)
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
	pred, err := model(best)
	if err != nil {
		return nil, fmt.Errorf("fit: the best point is infeasible: %w (last model error: %v)", err, modelErr)
	}
	out := &Outcome{Evals: evals}
	for i := range pred {
		out.Residuals = append(out.Residuals, measured[i]-pred[i])
		out.RMS += out.Residuals[i] * out.Residuals[i]
	}
	out.RMS = math.Sqrt(out.RMS / float64(len(pred)))
	out.Params, err = standardErrors(model, params, res.X, best, out, len(measured))
	return out, err
}

// standardErrors estimates each parameter's standard error from the
// Jacobian of the predictions with respect to log-parameters at z.
func standardErrors(model Model, params []Param, z, best []float64, out *Outcome, n int) ([]Fitted, error) {
	k := len(params)
	fitted := make([]Fitted, k)
	const h = 1e-3
	J := mat.NewDense(n, k, nil)
	for j := range params {
		zp := append([]float64(nil), z...)
		zm := append([]float64(nil), z...)
		zp[j] += h
		zm[j] -= h
		vp := clampExp(zp, params)
		vm := clampExp(zm, params)
		pp, err := model(vp)
		if err != nil {
			return nil, err
		}
		pm, err := model(vm)
		if err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			J.Set(i, j, (pp[i]-pm[i])/(2*h))
		}
	}
	dof := max(n-k, 1)
	s2 := out.RMS * out.RMS * float64(n) / float64(dof)
	// Parameters the predictions do not depend on are dropped before the
	// normal matrix is inverted.
	var live []int
	for j, p := range params {
		fitted[j] = Fitted{Name: p.Name, Value: best[j], SE: math.NaN(), Identified: true}
		if mat.Norm(J.ColView(j), 2) < 1e-12*math.Max(1, out.RMS) {
			fitted[j] = Fitted{Name: p.Name, Value: p.Start, SE: math.NaN(), Why: "the predictions do not depend on it in this run"}
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
		if invErr != nil {
			fitted[j] = Fitted{Name: p.Name, Value: p.Start, SE: math.NaN(), Why: "confounded with another parameter in this run (singular normal matrix)"}
			continue
		}
		// d value = value · d z, so SE(value) = value · SE(z).
		fitted[j].SE = best[j] * math.Sqrt(math.Max(s2*inv.At(c, c), 0))
		if best[j] <= p.Min*(1+1e-9) || best[j] >= p.Max*(1-1e-9) {
			fitted[j].Why = "at its bound"
		}
	}
	return fitted, nil
}

func clampExp(z []float64, params []Param) []float64 {
	v := make([]float64, len(z))
	for i, p := range params {
		v[i] = math.Min(math.Max(math.Exp(z[i]), p.Min), p.Max)
	}
	return v
}
