package agent

// LiveCalibrateOptions are the calibrate options of lessim's live engine
// (the request's engine-defined JSON object; `lessim calibrate --target`
// sends them when calibrate's measuring flags are set). Absent or zero
// fields take runtime/calibrate's defaults (a thorough run of about a
// minute on a small model). Another engine defines its own options; the
// simulator engine takes none.
type LiveCalibrateOptions struct {
	Samples    int     `json:"samples,omitempty"`     // samples per measured value
	Reads      int     `json:"reads,omitempty"`       // reads per lane per flash sample
	Tokens     int     `json:"tokens,omitempty"`      // decoded tokens per model for the compute fit
	Lanes      []int   `json:"lanes,omitempty"`       // reads in flight, from 1, increasing
	SizesBytes []int64 `json:"sizes_bytes,omitempty"` // O_DIRECT read sizes, multiples of 4 KiB, increasing
	MemBytes   int64   `json:"mem_bytes,omitempty"`   // buffer streamed for memory bandwidth
}
