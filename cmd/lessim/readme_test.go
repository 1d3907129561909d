package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeExample is one "$ lessim ..." command of a ```console block in
// README.md with the output printed under it.
type readmeExample struct {
	line int // 1-based line of the command
	end  int // line after the last output line
	args []string
	want string
}

// readmeExamples extracts the verified examples: every ```console block.
// Blocks fenced as ```text show real but machine-dependent output (timings)
// and are not compared.
func readmeExamples(t *testing.T, path string) []readmeExample {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeExample
	var cur *readmeExample
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case !in && strings.TrimSpace(l) == "```console":
			in = true
		case in && strings.TrimSpace(l) == "```":
			if cur != nil {
				cur.end = n
			}
			in, cur = false, nil
		case in && strings.HasPrefix(l, "$ "):
			if cur != nil {
				cur.end = n
			}
			fields := strings.Fields(strings.TrimPrefix(l, "$ "))
			if len(fields) == 0 || fields[0] != "lessim" {
				t.Fatalf("README.md:%d: a console example must run lessim: %q", n, l)
			}
			out = append(out, readmeExample{line: n, args: unquote(fields[1:])})
			cur = &out[len(out)-1]
		case in && cur != nil:
			cur.want += l + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// unquote joins "quoted words" the way a shell would (no escapes needed here).
func unquote(fields []string) []string {
	var out []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.HasPrefix(f, `"`) && !strings.HasSuffix(f, `"`) {
			for i+1 < len(fields) {
				i++
				f += " " + fields[i]
				if strings.HasSuffix(fields[i], `"`) {
					break
				}
			}
		}
		out = append(out, strings.Trim(f, `"`))
	}
	return out
}

// TestREADME runs every console example of README.md in order, in one
// scratch directory, and compares the output exactly.
func TestREADME(t *testing.T) {
	readme, err := filepath.Abs(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(readme)
	examples := readmeExamples(t, readme)
	if len(examples) < 8 {
		t.Fatalf("README.md has only %d console examples", len(examples))
	}
	dir := t.TempDir()
	// Examples refer to repository files by their path from the root and to
	// the shared reference traces as ../shared/...; mirror both.
	for _, link := range []string{"traces", "cmd", "experiment", "docs"} {
		if err := os.Symlink(filepath.Join(root, link), filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	got := make([]string, len(examples))
	for i, ex := range examples {
		if needsLlama(ex.args) && !haveLlama {
			t.Logf("README.md:%d: skipped (needs a llamacpp build): lessim %s", ex.line, strings.Join(ex.args, " "))
			got[i] = ex.want
			continue
		}
		got[i] = runCLI(t, "", ex.args...)
		if *rewrite {
			continue
		}
		if got := got[i]; got != ex.want {
			t.Errorf("README.md:%d: lessim %s\n--- got\n%s--- README says\n%s", ex.line, strings.Join(ex.args, " "), got, ex.want)
		}
	}
	if *rewrite {
		rewriteREADME(t, readme, examples, got)
	}
}

// rewriteREADME replaces each example's output with what the command printed.
func rewriteREADME(t *testing.T, path string, examples []readmeExample, got []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	var b strings.Builder
	next := 0
	for i, ex := range examples {
		for ; next < ex.line; next++ {
			b.WriteString(lines[next])
		}
		b.WriteString(got[i])
		next = ex.end - 1
	}
	for ; next < len(lines); next++ {
		b.WriteString(lines[next])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func needsLlama(args []string) bool { return len(args) > 0 && (args[0] == "record") }
