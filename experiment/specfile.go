package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// ReadSpec reads the spec in file (- = stdin): a result's JSON or a bare
// spec; with anyOutput, the "spec" member of any lessim JSON output (live's
// has engine inputs beside it). named reports which of the spec's groups
// the file states itself (Parse fills the others with defaults).
func ReadSpec(file string, stdin io.Reader, anyOutput bool) (s Spec, named func(group string) bool, err error) {
	data, err := ReadSpecFile(file, stdin)
	if err != nil {
		return s, nil, err
	}
	if anyOutput {
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) == nil && top["spec"] != nil {
			data = top["spec"]
		}
	}
	if s, named, err = ParseNamed(data); err != nil {
		return s, nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, named, nil
}

// ParseNamed is Parse, also reporting which of the spec's groups data
// states itself (Parse fills the others with defaults).
func ParseNamed(data []byte) (s Spec, named func(group string) bool, err error) {
	if s, err = Parse(data); err != nil {
		return s, nil, err
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimPrefix(data, []byte("\ufeff")), &top) == nil {
		if inner, ok := top["spec"]; ok { // a result's JSON
			top = nil
			_ = json.Unmarshal(inner, &top)
		}
	}
	return s, func(g string) bool { _, ok := top[g]; return ok }, nil
}
