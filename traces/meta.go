package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/jsonscan"
)

// Meta is a trace's file-level metadata: the model it was recorded on (shape,
// quant types, exact expert byte sizes) and where it came from. It is stored as
// JSON in the Parquet file's key-value metadata under MetaKey.
type Meta struct {
	// Model is the full spec of the recorded model; a trace is self-describing,
	// so `simulate --trace` needs no --model.
	Model devices.ModelSpec `json:"model"`
	// LookaheadDepth is how many next layers' scores each row carries (0 = none).
	LookaheadDepth int `json:"lookahead_depth"`
	// LookaheadTop > 0 says the lookahead is stored compactly: per depth,
	// each row's LookaheadTop best candidates with their scores and the
	// vector's softmax sum (the CandidateIndex IndexLookahead computes), not
	// the full score vector. A Reader then returns them as
	// LayerStep.LookaheadIndex and Lookahead as empty (non-nil) vectors.
	// Writer: set it to store a trace's full vectors compactly.
	LookaheadTop int `json:"lookahead_top,omitempty"`
	// HasLogits / HasRouterInputs say whether those optional columns are filled.
	HasLogits       bool `json:"has_logits"`
	HasRouterInputs bool `json:"has_router_inputs"`
	// Origin says what produced the trace: "record", "synth", "import:bmoe-route-csv".
	Origin string `json:"origin"`
	// Info holds provenance: model file name, size and sha256, engine version,
	// prompt set, seed, lessim version, generator parameters, attribution.
	Info map[string]string `json:"info,omitempty"`
}

// MetaKey is the Parquet key-value metadata key holding Meta as JSON.
const MetaKey = "lessim.trace.meta"

// FormatVersion is the trace schema version stored beside Meta under VersionKey.
const (
	FormatVersion = "1"
	VersionKey    = "lessim.trace.version"
)

// decodeMeta decodes the JSON stored under MetaKey strictly: a key Meta does
// not know, a key given twice in one object (encoding/json would keep the
// last) and data after the object are errors, so a corrupted key name cannot
// become a silent zero. The values are checked by pqCheckMeta.
func decodeMeta(data []byte, m *Meta) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("unexpected end of JSON input")
		}
		return jsonscan.Explain(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	// NB: the JSON is valid by now, so the scan's only error is a repeated key.
	return jsonscan.DuplicateKeys(data)
}
