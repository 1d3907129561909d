package record

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

//go:embed prompts.txt
var builtinPrompts string

// BuiltinPromptSet is the name of the embedded default prompt set.
const BuiltinPromptSet = "builtin-v1"

// PromptSet is a named list of prompts with a content hash for provenance.
type PromptSet struct {
	Name    string
	Prompts []string
	// Hash is the hex sha256 of the prompts, each written as "<byte length>:<text>",
	// so the same prompts hash the same whatever file they came from.
	Hash string
}

// Builtin returns the embedded prompt set: prose, code, lists, numbers, SQL,
// dialogue, French and a table, so that many experts are exercised.
func Builtin() PromptSet {
	ps, err := ParsePrompts(strings.NewReader(builtinPrompts), "prompts.txt")
	if err != nil {
		panic("record: embedded prompts.txt: " + err.Error()) // NB: a build-time asset, covered by a test
	}
	ps.Name = BuiltinPromptSet
	return ps
}

// promptSet resolves the prompts to record.
func (o *Options) promptSet() PromptSet {
	if o.Prompts == nil {
		return Builtin()
	}
	ps := InlinePrompts(o.Prompts...)
	if o.PromptSet != "" {
		ps.Name = o.PromptSet
	}
	return ps
}

// ReadPrompts reads a prompt file (format: see ParsePrompts). The set is named
// after the file's base name.
func ReadPrompts(path string) (PromptSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return PromptSet{}, fmt.Errorf("prompts: %w", err)
	}
	defer f.Close()
	return ParsePrompts(f, path)
}

// ParsePrompts reads prompts separated by one or more blank lines; the lines of
// one prompt are joined with "\n" (so a prompt may hold code). Lines whose
// first character is '#' are comments. Trailing spaces are kept except at the
// end of a prompt. name labels errors ("file:line: reason") and the set.
func ParsePrompts(r io.Reader, name string) (PromptSet, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var (
		prompts []string
		cur     []string
		line    int
	)
	flush := func() {
		if len(cur) > 0 {
			prompts = append(prompts, strings.TrimRight(strings.Join(cur, "\n"), " \t\r\n"))
			cur = cur[:0]
		}
	}
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		switch {
		case strings.HasPrefix(text, "#"):
			continue
		case strings.TrimSpace(text) == "":
			flush()
		default:
			if strings.ContainsRune(text, 0) {
				return PromptSet{}, fmt.Errorf("%s:%d: NUL byte in prompt", name, line)
			}
			cur = append(cur, text)
		}
	}
	if err := sc.Err(); err != nil {
		return PromptSet{}, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	flush()
	if len(prompts) == 0 {
		return PromptSet{}, fmt.Errorf("%s: no prompts (prompts are separated by blank lines; '#' starts a comment line)", name)
	}
	return PromptSet{Name: baseName(name), Prompts: prompts, Hash: hashPrompts(prompts)}, nil
}

// InlinePrompts makes a set from prompts given on the command line.
func InlinePrompts(prompts ...string) PromptSet {
	return PromptSet{Name: "inline", Prompts: prompts, Hash: hashPrompts(prompts)}
}

func hashPrompts(prompts []string) string {
	h := sha256.New()
	for _, p := range prompts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
