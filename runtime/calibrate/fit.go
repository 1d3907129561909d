package calibrate

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// ShapePoint is one model decoded with every weight in RAM: its shape and the
// work the simulator charges per token (sim's compute model: Σ over layers of
// dense bytes + top-k × expert bytes, plus the head), and the measured time per
// decoded token.
type ShapePoint struct {
	Name          string
	Layers, TopK  int
	Bytes, FLOPs  float64 // per token
	TokenNS       Summary
	BatchNS       map[int]Summary // pass time by tokens per pass (the user's model only)
	DenseBytes    float64         // one layer's dense bytes (mean over layers)
	ExpertBytes   float64         // one expert's bytes (mean over layers)
	ExpertFLOPs   float64         // one expert's FLOPs per token (mean over layers)
	ModelFLOPsTok float64         // FLOPs per token of the whole model
}

// Compute is the fit of decode time against model shape, 1 thread:
// time per token = LayerOverheadNS × layers + bytes per token ÷ BytesPerSec,
// least squares over Points (the user's model and synthetic variants of it).
// FLOPS comes from batched passes of the user's model: FLOPs per token ÷ the
// time one more token adds to a pass.
type Compute struct {
	Points          []ShapePoint
	BytesPerSec     float64
	LayerOverheadNS float64
	OverheadFitted  bool   // false when the model's shape could not be varied
	Clamped         bool   // the fit's overhead came out negative and was held at 0
	Why             string // why not, when !OverheadFitted
	FLOPS           float64
	BatchSlopeNS    float64
	Threads         int
}

// batchSizes are the pass sizes timed for the FLOP rate.
var batchSizes = []int{1, 2, 4, 8}

// fit solves for the per-layer overhead and the byte rate, and the FLOP rate.
func (c *Compute) fit(why string) error {
	u := c.Points[0]
	if len(c.Points) >= 2 {
		a := mat.NewDense(len(c.Points), 2, nil)
		b := mat.NewVecDense(len(c.Points), nil)
		for i, p := range c.Points {
			a.Set(i, 0, float64(p.Layers))
			a.Set(i, 1, p.Bytes)
			b.SetVec(i, p.TokenNS.Median)
		}
		var x mat.VecDense
		err := x.SolveVec(a, b)
		switch {
		case err == nil && x.AtVec(0) >= 0 && x.AtVec(1) > 0:
			c.LayerOverheadNS, c.BytesPerSec, c.OverheadFitted = x.AtVec(0), 1e9/x.AtVec(1), true
		default:
			// The constraint overhead >= 0 binds: fit time = bytes ÷ rate alone
			// (least squares through the origin) and report a zero overhead.
			var sxy, sxx float64
			for _, p := range c.Points {
				sxy += p.Bytes * p.TokenNS.Median
				sxx += p.Bytes * p.Bytes
			}
			if sxy > 0 {
				c.LayerOverheadNS, c.BytesPerSec, c.OverheadFitted, c.Clamped = 0, 1e9*sxx/sxy, true, true
			} else {
				why = fmt.Sprintf("the least-squares fit over %d shapes gave no positive rate", len(c.Points))
			}
		}
	}
	if !c.OverheadFitted {
		c.Why = why
		c.LayerOverheadNS = 0
		c.BytesPerSec = u.Bytes / (u.TokenNS.Median / 1e9)
	}
	var xs, ys []float64
	for _, n := range batchSizes {
		if s, ok := u.BatchNS[n]; ok {
			xs, ys = append(xs, float64(n)), append(ys, s.Median)
		}
	}
	slope := u.TokenNS.Median
	if len(xs) >= 2 {
		var sx, sy, sxx, sxy float64
		for i := range xs {
			sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
		}
		n := float64(len(xs))
		if d := n*sxx - sx*sx; d > 0 {
			if s := (n*sxy - sx*sy) / d; s > 0 {
				slope = min(s, slope)
			}
		}
	}
	c.BatchSlopeNS = slope
	c.FLOPS = u.ModelFLOPsTok / (slope / 1e9)
	if c.BytesPerSec <= 0 || c.FLOPS <= 0 {
		return errors.New("calibrate: decode timing gave no positive rate")
	}
	return nil
}
