package record

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParsePrompts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"one per paragraph", "a b\n\nc\n", []string{"a b", "c"}, ""},
		{"multi-line keeps code", "func f() {\n\treturn 1\n}\n\n\n\nnext", []string{"func f() {\n\treturn 1\n}", "next"}, ""},
		{"comments and CRLF", "# header\r\nfirst\r\n# inside\r\nsecond line\r\n\r\nthird", []string{"first\nsecond line", "third"}, ""},
		{"whitespace-only lines separate", "a\n  \t\nb", []string{"a", "b"}, ""},
		{"BOM", "\ufeffhello", []string{"hello"}, ""},
		{"empty", "# only a comment\n\n", nil, "x.txt: no prompts"},
		{"NUL", "ok\n\nbad\x00line", nil, "x.txt:3: NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := ParsePrompts(strings.NewReader(tc.in), "x.txt")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ps.Prompts, tc.want) {
				t.Fatalf("prompts %q, want %q", ps.Prompts, tc.want)
			}
			if ps.Hash != InlinePrompts(tc.want...).Hash || ps.Name != "x.txt" {
				t.Errorf("name %q hash %s: want x.txt and the hash of the same prompts inline", ps.Name, ps.Hash)
			}
		})
	}
}

func TestBuiltinPrompts(t *testing.T) {
	b := Builtin()
	if b.Name != BuiltinPromptSet || len(b.Prompts) < 10 {
		t.Fatalf("builtin set %q has %d prompts", b.Name, len(b.Prompts))
	}
	for i, p := range b.Prompts {
		if strings.HasPrefix(p, "#") || p == "" {
			t.Errorf("prompt %d = %q", i, p)
		}
	}
	if h := InlinePrompts("a", "b").Hash; h == InlinePrompts("a\x00b").Hash || h == InlinePrompts("ab").Hash {
		t.Error("prompt hash does not separate prompts")
	}
}

func TestReadPrompts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mine.txt")
	os.WriteFile(p, []byte("x\n\ny\n"), 0o644)
	ps, err := ReadPrompts(p)
	if err != nil || ps.Name != "mine.txt" || len(ps.Prompts) != 2 {
		t.Fatalf("ReadPrompts = %+v, %v", ps, err)
	}
	if _, err := ReadPrompts(filepath.Join(t.TempDir(), "missing.txt")); err == nil {
		t.Error("ReadPrompts(missing) succeeded")
	}
}

func FuzzParsePrompts(f *testing.F) {
	f.Add(builtinPrompts)
	if data, err := os.ReadFile("testdata/prompts-example.txt"); err == nil {
		f.Add(string(data))
	}
	f.Add("a\r\n\r\n#c\nb\x00")
	f.Fuzz(func(t *testing.T, in string) {
		ps, err := ParsePrompts(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		if len(ps.Prompts) == 0 {
			t.Fatal("no error and no prompts")
		}
		for _, p := range ps.Prompts {
			if p == "" || strings.Contains(p, "\n\n") {
				t.Fatalf("bad prompt %q", p)
			}
		}
	})
}
