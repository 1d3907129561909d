package calibrate

import (
	"errors"
	"fmt"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/fit"
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
	// TypeBytes splits Bytes by the ggml type the spec states (dense
	// types, expert tensors, head); bytes of no stated type are not in it.
	TypeBytes map[devices.QuantType]float64
}

// FormatPoint is one weight format's decode rate: a synthetic variant of
// the model's shape with every matrix in Type, timed like the others, and
// the byte rate of its Type bytes once the fit's per-layer overhead and its
// other bytes (norms, routers) at the fit's rate are taken off:
// BytesPerSec = TypeBytes[Type] ÷ (time − layers × overhead − other ÷ rate).
// Why says why there is none (BytesPerSec 0): the shape cannot hold the
// format's blocks, or the time left was not positive.
type FormatPoint struct {
	Type        devices.QuantType
	Point       ShapePoint
	BytesPerSec float64
	Why         string
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
	// PassScale is compute.pass_scale by tokens per pass: (pass time −
	// layers × overhead) ÷ (tokens × BatchSlopeNS); nil without passes.
	PassScale map[int]float64
	Threads   int
	// Formats are the per-format rates (memory.format_efficiency), by type.
	Formats []FormatPoint
	// Draft is the draft model's decode (compute.draft_token), nil without
	// one.
	Draft *DraftPoint
}

// DraftPoint is a draft model's one-token decode time and the weight bytes
// it reads per token (compute.draft_token and compute.draft_bytes).
type DraftPoint struct {
	Name    string
	Bytes   int64
	TokenNS Summary
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
	// One token's work past the per-layer overhead caps the slope: the
	// simulator charges the overhead besides the FLOPs, and a one-token pass
	// must cost what it measured. What each pass measured beyond (or short
	// of) the line is its pass scale, so the simulator's passes of 2, 4 and
	// 8 tokens cost what they measured too.
	lo := c.LayerOverheadNS * float64(u.Layers)
	one := u.TokenNS.Median - lo
	if one <= 0 {
		one = u.TokenNS.Median
		lo = 0
	}
	slope := one
	line, err := fit.FitLine(xs, ys)
	if err == nil && line.Slope > 0 {
		slope = min(line.Slope, slope)
	}
	c.BatchSlopeNS = slope
	c.FLOPS = u.ModelFLOPsTok / (slope / 1e9)
	c.PassScale = nil
	if err == nil {
		c.PassScale = map[int]float64{}
		for _, n := range batchSizes[1:] {
			if s, ok := u.BatchNS[n]; ok {
				c.PassScale[n] = min(max((s.Median-lo)/(float64(n)*slope), 0.05), 5) // devices' bound
			}
		}
	}
	if c.BytesPerSec <= 0 || c.FLOPS <= 0 {
		return errors.New("calibrate: decode timing gave no positive rate")
	}
	return nil
}
