package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExplain: decoding errors read in the document's words (its paths, what
// was wanted and given), never Go's type names.
func TestExplain(t *testing.T) {
	type inner struct {
		N  int     `json:"n"`
		U  uint8   `json:"u"`
		F  float64 `json:"f"`
		S  string  `json:"s"`
		B  bool    `json:"b"`
		Xs []int   `json:"xs"`
	}
	type doc struct {
		In inner `json:"in"`
	}
	for _, tc := range []struct{ in, want string }{
		{`[]`, "want a JSON object, got an array"},
		{`{"in":{"n":50.5}}`, "in.n: want a whole number, got 50.5"},
		{`{"in":{"n":1e300}}`, "in.n: want a whole number in [-9223372036854775808, 9223372036854775807], got 1e300"},
		{`{"in":{"u":-1}}`, "in.u: want a whole number in [0, 255], got -1"},
		{`{"in":{"u":0.5}}`, "in.u: want a whole number >= 0, got 0.5"},
		{`{"in":{"f":1e400}}`, "in.f: want a number within ±1.8e+308, got 1e400"},
		{`{"in":{"f":"x"}}`, "in.f: want a number, got a string"},
		{`{"in":{"s":1}}`, "in.s: want a string, got a number"},
		{`{"in":{"b":{}}}`, "in.b: want true or false, got an object"},
		{`{"in":{"xs":true}}`, "in.xs: want a JSON array, got a boolean"},
		{"{\n\"in\": }", "line 2, column 8: invalid character"},
	} {
		var d doc
		err := Explain([]byte(tc.in), json.Unmarshal([]byte(tc.in), &d))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}
