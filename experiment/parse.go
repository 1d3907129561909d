package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lessim/lessim/internal/jsonscan"
	"github.com/lessim/lessim/internal/textin"
	"github.com/lessim/lessim/policies"
)

// Parse reads a spec from JSON: either a bare spec or a result as `simulate
// --format json` prints it ({"spec": ..., "spec_hash": ..., "result": ...}),
// whose spec is taken (and its spec_hash checked). Unknown fields are
// refused. Absent fields take their defaults: a missing group is the
// default's (DefaultSpec) where the spec needs one, and a synthetic,
// predictor or speculative group starts from DefaultSynthetic,
// DefaultPredictor or DefaultSpeculative. A leading UTF-8 byte-order mark
// is skipped. Parse does not Validate.
func Parse(data []byte) (Spec, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Spec{}, fmt.Errorf("spec: %w", jsonscan.Explain(data, err))
	}
	if top == nil {
		return Spec{}, errors.New("spec: want a JSON object, got null")
	}
	if err := jsonscan.DuplicateKeys(data); err != nil {
		return Spec{}, fmt.Errorf("spec: %w", err)
	}
	raw, wrapped := top["spec"]
	if !wrapped {
		if _, ok := top["inputs"]; ok {
			return Spec{}, errors.New("spec: this result has no \"spec\" (written by lessim before specs existed): rerun it to get one")
		}
		if err := resultWithoutSpec(top); err != nil {
			return Spec{}, err
		}
		return parseSpec(data)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Spec{}, errors.New("spec: the result's \"spec\" is null: a result holds the spec it ran")
	}
	for k := range top {
		if k != "spec" && k != "spec_hash" && k != "result" {
			return Spec{}, fmt.Errorf("spec: unknown field %q beside \"spec\" (want spec, spec_hash, result)", k)
		}
	}
	s, err := parseSpec(raw)
	if err != nil {
		return Spec{}, err
	}
	if h, ok := top["spec_hash"]; ok {
		var want string
		if err := json.Unmarshal(h, &want); err != nil {
			return Spec{}, fmt.Errorf("spec_hash: %w", jsonscan.Explain(h, err))
		}
		if got := s.Hash(); got != want {
			return Spec{}, fmt.Errorf("spec_hash %s does not match the spec (its hash is %s): the spec was edited; remove spec_hash to run the edited spec", want, got)
		}
	}
	return s, nil
}

// resultWithoutSpec refuses a result's JSON (spec_hash or result beside
// the spec) whose "spec" is missing, rather than read its members as
// unknown spec fields.
func resultWithoutSpec(top map[string]json.RawMessage) error {
	var have []string
	for _, k := range []string{"spec_hash", "result"} {
		if _, ok := top[k]; ok {
			have = append(have, strconv.Quote(k))
		}
	}
	if have == nil {
		return nil
	}
	return fmt.Errorf("spec: this is a result's JSON (it has %s) without its \"spec\": the spec it ran is missing; use the whole output of simulate --format json, or a bare spec", strings.Join(have, " and "))
}

// parseSpec decodes a bare spec strictly and fills absent groups.
func parseSpec(data []byte) (Spec, error) {
	// NB: cached_first's zero (false) is meaningful, so it starts true and
	// stays true when absent; every other absent field is zero, filled below.
	s := Spec{CachedFirst: true}
	if err := strictDecode(data, &s); err != nil {
		return Spec{}, fmt.Errorf("spec: %w", jsonscan.Explain(data, err))
	}
	if err := checkEmpty(data); err != nil {
		return Spec{}, err
	}
	def := DefaultSpec()
	if s.Version == 0 {
		s.Version = Version
	}
	if s.Trace.Path == "" && s.Trace.Synthetic == nil {
		s.Trace.Synthetic = def.Trace.Synthetic
	}
	if s.Model == nil && s.Trace.Path == "" {
		s.Model = def.Model
	}
	if s.Device == (Device{}) {
		s.Device = def.Device
	}
	if s.Policy.Name == "" {
		s.Policy.Name = def.Policy.Name
	}
	if s.Cache == (Cache{}) {
		s.Cache = def.Cache
	}
	if s.Layout == "" {
		s.Layout = def.Layout
	}
	if s.SpecFromTrace && s.Speculative != nil {
		// NB: with the trace's passes only the drafter applies: the group
		// takes no defaults, so a block or acceptance stated is refused.
		var top struct {
			Speculative json.RawMessage `json:"speculative"`
		}
		type plain Speculative
		var q plain
		if err := errors.Join(json.Unmarshal(data, &top), json.Unmarshal(top.Speculative, &q)); err != nil {
			return Spec{}, fmt.Errorf("spec: %w", err)
		}
		*s.Speculative = Speculative(q)
	}
	return s, nil
}

// emptyHints are the fields whose absence means a default, with the values
// they take: null or "" there would silently mean the default too, so they
// are refused (omit the field for the default).
var emptyHints = map[string]string{
	"model.name":  "a built-in model (lessim models list)",
	"device":      "a device group",
	"device.name": "an embedded profile (lessim devices list)",
	"device.file": "a profile YAML file",
	"trace.path":  "a Parquet trace",
	"policy":      "a policy group",
	"policy.name": "a policy (" + strings.Join(policies.Names(), ", ") + ")",
	"cache":       "a cache group",
	"cache.size":  "a size (3GiB, 40%, auto)",
	"layout":      "a layout (per-expert, gguf-mmap)",
}

// checkEmpty refuses null or "" in a field of emptyHints, naming each.
func checkEmpty(data []byte) error {
	var errs []error
	_ = jsonscan.Scan(data, func(path string, v json.Token) {
		if hint, ok := emptyHints[path]; ok && (v == nil || v == "") {
			errs = append(errs, fmt.Errorf("spec: %s: empty: give %s, or omit the field for the default", path, hint))
		}
	}) // NB: strictDecode has read data already: no syntax error is left
	return errors.Join(errs...)
}

// strictDecode decodes one JSON value into v, refusing unknown fields and
// trailing data. Its errors are the decoder's, for jsonscan.Explain.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// groupError is a group's decoding error as its UnmarshalJSON returns it:
// a value of the wrong type as the decoder made it, so that the decoder
// names its field by the whole path (trace.synthetic.tokens) for
// jsonscan.Explain; any other error prefixed by the group's path.
func groupError(group string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te
	}
	return fmt.Errorf("%s: %w", group, err)
}

// UnmarshalJSON decodes a synthetic group over DefaultSynthetic.
func (s *Synthetic) UnmarshalJSON(b []byte) error {
	type plain Synthetic
	p := plain(DefaultSynthetic())
	if err := strictDecode(b, &p); err != nil {
		return groupError("trace.synthetic", err)
	}
	*s = Synthetic(p)
	return nil
}

// UnmarshalJSON decodes a predictor group over DefaultPredictor.
func (p *Predictor) UnmarshalJSON(b []byte) error {
	type plain Predictor
	q := plain(DefaultPredictor())
	if err := strictDecode(b, &q); err != nil {
		return groupError("predictor", err)
	}
	*p = Predictor(q)
	return nil
}

// UnmarshalJSON decodes a speculative group over DefaultSpeculative.
func (sp *Speculative) UnmarshalJSON(b []byte) error {
	type plain Speculative
	q := plain(DefaultSpeculative())
	if err := strictDecode(b, &q); err != nil {
		return groupError("speculative", err)
	}
	*sp = Speculative(q)
	return nil
}

// MaxSpecBytes bounds a spec file: a result's JSON with its per-pass series
// of a long run fits; a larger file is not a spec.
const MaxSpecBytes = 16 << 20

// ReadSpecFile reads the spec file at path ("-" reads stdin), refusing one
// longer than MaxSpecBytes (a *textin.TooLargeError) before holding it.
func ReadSpecFile(path string, stdin io.Reader) ([]byte, error) {
	return textin.ReadFile(path, "spec", MaxSpecBytes, stdin)
}
