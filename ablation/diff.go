package ablation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/lessim/lessim/experiment"
)

// Leaf is one value of a spec: its dotted JSON path (array elements as
// path[i]) and its value as canonical JSON text.
type Leaf struct {
	Path  string `json:"field"`
	Value string `json:"value"`
}

// Leaves flattens s's canonical encoding (experiment.Spec.Canonical) into its
// leaves in field order. Absent groups have no leaves.
func Leaves(s experiment.Spec) ([]Leaf, error) {
	b, err := s.Canonical()
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []Leaf
	if err := walk(dec, "", &out); err != nil {
		return nil, fmt.Errorf("flatten spec: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("flatten spec: trailing data")
	}
	return out, nil
}

// walk reads one JSON value from dec and appends its leaves under path.
func walk(dec *json.Decoder, path string, out *[]Leaf) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if err := walk(dec, join(path, k.(string)), out); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walk(dec, fmt.Sprintf("%s[%d]", path, i), out); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token() // the closing delimiter
		return err
	default:
		v, err := json.Marshal(t)
		if err != nil {
			return err
		}
		*out = append(*out, Leaf{Path: path, Value: string(v)})
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Difference is one field whose value differs between two specs. From or To
// is "" when the field is absent on that side.
type Difference struct {
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

// String is "field: from → to", "absent" standing for a missing side.
func (d Difference) String() string {
	return fmt.Sprintf("%s: %s → %s", d.Field, orAbsent(d.From), orAbsent(d.To))
}

func orAbsent(v string) string {
	if v == "" {
		return "absent"
	}
	return v
}

// Diff lists the leaves that differ from a to b: changed and added fields in
// b's order, then removed fields in a's order.
func Diff(a, b []Leaf) []Difference {
	av := make(map[string]string, len(a))
	for _, l := range a {
		av[l.Path] = l.Value
	}
	bv := make(map[string]bool, len(b))
	var out []Difference
	for _, l := range b {
		bv[l.Path] = true
		if from, ok := av[l.Path]; !ok || from != l.Value {
			out = append(out, Difference{Field: l.Path, From: from, To: l.Value})
		}
	}
	for _, l := range a {
		if !bv[l.Path] {
			out = append(out, Difference{Field: l.Path, From: l.Value})
		}
	}
	return out
}

// Under reports whether field is path or lies below it (path.x, path[i]).
func Under(field, path string) bool {
	return field == path || strings.HasPrefix(field, path+".") || strings.HasPrefix(field, path+"[")
}
