package calibrate

import "github.com/lessim/lessim/devices"

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
	Threads         int
	// Formats are the per-format rates (memory.format_efficiency), by type.
	Formats []FormatPoint
}

// batchSizes are the pass sizes timed for the FLOP rate.
var batchSizes = []int{1, 2, 4, 8}
