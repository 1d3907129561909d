package yamlin

import (
	"strings"
	"testing"
)

func TestParseProblems(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"valid", "a: 1\nb: {c: 2}\n", ""},
		{"empty documents after the first", "a: 1\n---\n---\n# nothing\n", ""},
		{"quoted << is a plain key", "a: {'<<': 1}\n", ""},
		{"duplicate top key", "name: a\nname: b\n", `duplicate key "name" (line 2, first at 1)`},
		{"duplicate nested key", "m:\n  e:\n    v: 1\n    v: 2\n", `m.e: duplicate key "v" (line 4, first at 3)`},
		{"duplicate section", "m:\n  e: 1\n  e: {v: 2}\nm: {}\n",
			`m: duplicate key "e" (line 3, first at 2)` + "\n" + `duplicate key "m" (line 4, first at 1)`},
		{"in a list", "l:\n  - {a: 1, a: 2}\n", `l[0]: duplicate key "a" (line 2, first at 2)`},
		{"merge key", "x: &x {f: 1}\nc:\n  <<: *x\n  g: 2\n", `c: merge keys (<<) are not supported: write the fields out (line 3)`},
		{"second document", "a: 1\n---\nb: 2\n", `a test file holds one YAML document; found another at line 2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, probs, err := Parse([]byte(c.src), "test file")
			if err != nil || doc == nil {
				t.Fatalf("doc %v, err %v", doc, err)
			}
			var got []string
			for _, p := range probs {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), c.want)
			}
		})
	}
}

// TestParseRemovesRefusedKeys checks that decoding the returned document
// sees the first of duplicates and no merged fields, and does not fail.
func TestParseRemovesRefusedKeys(t *testing.T) {
	doc, _, err := Parse([]byte("x: &x {f: 1}\nc:\n  <<: *x\n  g: 2\n  g: 3\nd: 1\nd: 2\n"), "test file")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		C map[string]int `yaml:"c"`
		D int            `yaml:"d"`
	}
	if err := doc.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.C) != 1 || got.C["g"] != 2 || got.D != 1 {
		t.Errorf("decoded %+v, want c {g: 2}, d 1", got)
	}
}

func TestParseEmptyAndSyntax(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n"} {
		if doc, probs, err := Parse([]byte(src), "f"); doc != nil || probs != nil || err != nil {
			t.Errorf("%q: got %v %v %v, want nothing", src, doc, probs, err)
		}
	}
	for _, src := range []string{"a: [1\n", "a: 1\n---\nb: [\n"} {
		if _, _, err := Parse([]byte(src), "f"); err == nil || !strings.HasPrefix(err.Error(), "yaml: line") {
			t.Errorf("%q: got %v, want a syntax error", src, err)
		}
	}
}

// FuzzParse checks that Parse never panics and that what it returns decodes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a: 1\na: 2\n", "x: &x {f: 1}\nc: {<<: *x}\n", "a: 1\n---\nb: 2\n", "- [a, {b: 1, b: 2}]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, _, err := Parse(data, "f")
		if err != nil || doc == nil {
			return
		}
		var v any
		if err := doc.Decode(&v); err != nil && strings.Contains(err.Error(), "already defined") {
			t.Errorf("a duplicate key is left: %v", err)
		}
	})
}
