package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lessim/lessim/devices"
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
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	path, err := jsonDuplicateKey(data)
	if err == nil && path != "" {
		err = fmt.Errorf("key %s appears twice (which value is meant?)", path)
	}
	return err
}

// jsonFrame is one open object or array in jsonDuplicateKey's walk.
type jsonFrame struct {
	path    string
	keys    map[string]bool // nil for an array
	key     string          // object: the key whose value comes next
	wantKey bool            // object: the next token is a key (or '}')
	n       int             // array: the index of the next element
}

// valuePath returns the path of the value that starts next in f and moves on.
func (f *jsonFrame) valuePath() string {
	if f.keys == nil {
		f.n++
		return fmt.Sprintf("%s[%d]", f.path, f.n-1)
	}
	f.wantKey = true
	if f.path == "" {
		return f.key
	}
	return f.path + "." + f.key
}

// jsonDuplicateKey returns the path ("model.layers[3].block") of the first
// key that appears twice in one object of data, "" when none does, or the
// JSON syntax error that stopped the walk.
func jsonDuplicateKey(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*jsonFrame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.wantKey {
			if top.keys[k] {
				top.key = k
				return top.valuePath(), nil
			}
			top.keys[k], top.key, top.wantKey = true, k, false
			continue
		}
		path := ""
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		} else if top != nil {
			path = top.valuePath()
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &jsonFrame{path: path, keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &jsonFrame{path: path})
		}
	}
}
