package fit

import (
	"errors"
	"github.com/lessim/lessim/internal/errgolden"
	"math"
	"math/rand/v2"
	"testing"
)

func TestFitLineExact(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	y := []float64{3.1, 5.1, 7.1, 9.1, 11.1}
	l, err := FitLine(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l.Slope-2) > 1e-12 || math.Abs(l.Intercept-1.1) > 1e-12 || l.R2 < 0.999999 || l.SlopeSE > 1e-9 {
		t.Fatalf("line = %+v", l)
	}
}

func TestFitLineErrors(t *testing.T) {
	if _, err := FitLine([]float64{1, 1, 1}, []float64{1, 2, 3}); err == nil {
		t.Error("constant x accepted")
	}
	if _, err := FitLine([]float64{1}, []float64{1}); err == nil {
		t.Error("one point accepted")
	}
	if l, err := FitLine([]float64{1, 3}, []float64{1, 2}); err != nil || l.Slope != 0.5 || l.Intercept != 0.5 || l.SlopeSE != 0 {
		t.Errorf("two points: %+v, %v; want slope 0.5, intercept 0.5, SE 0", l, err)
	}
}

// A two-parameter model with noise: the fit recovers both within a few
// standard errors, and the standard errors are of the right size.
func TestLeastSquaresRecovers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200
	x := make([]float64, n)
	meas := make([]float64, n)
	for i := range x {
		x[i] = float64(i%17) + 1
		meas[i] = 3.5 + 0.25*x[i]*x[i]/(1+0.1*x[i]) + r.NormFloat64()*0.05
	}
	model := func(p []float64) ([]float64, error) {
		out := make([]float64, n)
		for i := range x {
			out[i] = p[0] + p[1]*x[i]*x[i]/(1+0.1*x[i])
		}
		return out, nil
	}
	o, err := LeastSquares(model, meas, []Param{{"a", 1, 0.01, 100}, {"b", 1, 0.01, 100}}, 4000)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{3.5, 0.25} {
		p := o.Params[i]
		if !p.Identified || math.Abs(p.Value-want) > 4*p.SE || p.SE <= 0 || p.SE > 0.05 {
			t.Errorf("%s = %g ± %g, want %g", p.Name, p.Value, p.SE, want)
		}
	}
	if o.RMS > 0.07 {
		t.Errorf("rms = %g", o.RMS)
	}
}

// A parameter the predictions ignore is reported as not identified and
// keeps its start value.
func TestLeastSquaresUnidentified(t *testing.T) {
	meas := []float64{2, 2, 2, 2}
	model := func(p []float64) ([]float64, error) { return []float64{p[0], p[0], p[0], p[0]}, nil }
	o, err := LeastSquares(model, meas, []Param{{"a", 1, 0.1, 10}, {"ignored", 5, 1, 10}}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(o.Params[0].Value-2) > 1e-3 || o.Params[1].Identified || o.Params[1].Value != 5 || o.Params[1].SE != 0 {
		t.Fatalf("params = %+v (an unidentified parameter keeps its start, standard error 0, not NaN)", o.Params)
	}
}

// A point the model refuses next to the optimum (a candidate profile
// outside the bounds) is infeasible, not an error: the standard error
// comes from the feasible side.
func TestLeastSquaresInfeasibleNeighbour(t *testing.T) {
	meas := []float64{1.99, 2.01, 1.98, 2.02}
	model := func(p []float64) ([]float64, error) {
		if p[0] > 2.0005 {
			return nil, errors.New("beyond the bounds")
		}
		return []float64{p[0], p[0], p[0], p[0]}, nil
	}
	o, err := LeastSquares(model, meas, []Param{{"a", 1, 0.1, 10}}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if p := o.Params[0]; !p.Identified || math.Abs(p.Value-2) > 1e-3 || !(p.SE > 0) || math.IsInf(p.SE, 0) {
		t.Fatalf("params = %+v", o.Params)
	}
}

// A model that always fails says why once.
func TestLeastSquaresInfeasibleOnce(t *testing.T) {
	model := func(p []float64) ([]float64, error) { return nil, errors.New("unknown policy") }
	_, err := LeastSquares(model, []float64{1}, []Param{{"a", 1, 0.1, 10}}, 100)
	errgolden.Check(t, "infeasible", err)
}

func TestLeastSquaresBadParams(t *testing.T) {
	model := func(p []float64) ([]float64, error) { return []float64{p[0]}, nil }
	for _, p := range []Param{{"neg", 1, -1, 2}, {"start out", 5, 1, 2}, {"inf", 1, 1, math.Inf(1)}} {
		if _, err := LeastSquares(model, []float64{1}, []Param{p}, 100); err == nil {
			t.Errorf("%s accepted", p.Name)
		}
	}
}
