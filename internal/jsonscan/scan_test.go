package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDuplicateKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"b":{"c":[{"d":1},{"d":2}]}}`, ""},
		{`{"policy":{"name":"lru"},"policy":{"name":"les"}}`, "line 1: duplicate key policy"},
		{"{\"a\":{\"b\":1,\n\"b\":2}}", "line 2: duplicate key a.b"},
		{`{"a":[{"x":1,"x":1}]}`, "duplicate key a[0].x"},
		{`{"a":1`, "EOF"},
		{`{"a":1} 2`, "trailing data"},
		{`{"a":{"b":1,"c":{"b":2},"b":3}}`, "duplicate key a.b:"},
		{`{"l":[{"x":1},{"x":1,"y":[],"x":2}]}`, "duplicate key l[1].x:"},
		{`{"l":[[],[{"k":"k"}],{"k":{},"k":null}]}`, "duplicate key l[2].k:"},
		{`{"info":{"k":"v","v":"k"},"k":1}`, ""},
	} {
		err := DuplicateKeys([]byte(tc.in))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestScanPaths(t *testing.T) {
	got := map[string]json.Token{}
	err := Scan([]byte(`{"a":{"b":null,"c":[1,"x"]},"d":""}`), func(p string, v json.Token) { got[p] = v })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]json.Token{"a.b": nil, "a.c[0]": json.Number("1"), "a.c[1]": "x", "d": ""}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: got %v, want %v", k, g, v)
		}
	}
}
