package fit

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/stat"
)

// Line is y = Intercept + Slope·x fitted by ordinary least squares.
type Line struct {
	Intercept, Slope     float64
	InterceptSE, SlopeSE float64 // standard errors
	R2                   float64
	N                    int
}

// FitLine fits a straight line to (x, y): lessim's one least-squares line
// (fit's management line, calibrate's latency, batch and load-cost lines). It
// needs at least two points and some spread in x; with two points the line
// passes through both and the standard errors are 0 (no residual to estimate
// them from).
func FitLine(x, y []float64) (Line, error) {
	n := len(x)
	if n != len(y) {
		return Line{}, errors.New("fit line: x and y differ in length")
	}
	if n < 2 {
		return Line{}, errors.New("fit line: need at least 2 points")
	}
	if stat.Variance(x, nil) == 0 {
		return Line{}, errors.New("fit line: x does not vary")
	}
	a, b := stat.LinearRegression(x, y, nil, false)
	var sse float64
	for i := range x {
		r := y[i] - (a + b*x[i])
		sse += r * r
	}
	mx := stat.Mean(x, nil)
	var sxx float64
	for _, v := range x {
		sxx += (v - mx) * (v - mx)
	}
	l := Line{Intercept: a, Slope: b, N: n, R2: stat.RSquared(x, y, nil, a, b)}
	if n > 2 {
		s2 := sse / float64(n-2)
		l.SlopeSE, l.InterceptSE = math.Sqrt(s2/sxx), math.Sqrt(s2*(1/float64(n)+mx*mx/sxx))
	}
	return l, nil
}
