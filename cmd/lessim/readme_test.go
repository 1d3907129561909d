package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The documentation's examples run as a test: every "$ lessim ..." line of a
// ```console block in README.md and in every docs/**/*.md page is run, and
// its output compared with the lines printed under it. Blocks fenced as
// ```text show real but machine-dependent output (timings, a phone, the
// shared reference traces) and are not compared; ```sh blocks are commands
// without output.

// docExample is one "$ lessim ..." command of a ```console block with the
// output printed under it.
type docExample struct {
	line  int // 1-based line of the command
	end   int // line after the last output line
	block int // index of its console block on the page
	args  []string
	want  string
}

// repoRoot is the repository's root, from this package's folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// docPages lists the pages whose examples are checked, relative to the root:
// README.md, then every Markdown file under docs/ in lexical order. A new
// page is picked up without editing this test.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pages[1:])
	return pages
}

// docExamples extracts the checked examples of one page: every ```console
// block. name is the page's path for messages.
func docExamples(t *testing.T, path, name string) []docExample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docExample
	var cur *docExample
	in, blocks, opened := false, 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 1
	for ; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case !in && strings.TrimSpace(l) == "```console":
			in, opened = true, n
		case in && strings.TrimSpace(l) == "```":
			if cur != nil {
				cur.end = n
			}
			in, cur = false, nil
			blocks++
		case in && strings.HasPrefix(l, "$ "):
			if cur != nil {
				cur.end = n
			}
			fields := strings.Fields(strings.TrimPrefix(l, "$ "))
			if len(fields) == 0 || fields[0] != "lessim" {
				t.Fatalf("%s:%d: a console example must run lessim: %q", name, n, l)
			}
			out = append(out, docExample{line: n, block: blocks, args: unquote(fields[1:])})
			cur = &out[len(out)-1]
		case in && cur == nil:
			t.Fatalf("%s:%d: a console block must start with a \"$ lessim\" command", name, n)
		case in:
			cur.want += l + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if in {
		t.Fatalf("%s:%d: console block not closed", name, opened)
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

// minConsoleBlocks is a floor on the checked blocks of all pages together,
// so that examples cannot silently stop being checked (a fence renamed, a
// page dropped): the 24 README.md held when the docs were split.
const minConsoleBlocks = 24

// TestREADME runs every console example of README.md and of every docs/
// page, each page in order in a scratch directory of its own, and compares
// the output exactly. With -rewrite it writes what the commands printed
// into the pages instead (read the diff).
func TestREADME(t *testing.T) {
	root := repoRoot(t)
	blocks, commands := 0, 0
	for _, page := range docPages(t, root) {
		path := filepath.Join(root, filepath.FromSlash(page))
		examples := docExamples(t, path, page)
		if len(examples) == 0 {
			continue
		}
		blocks += examples[len(examples)-1].block + 1
		commands += len(examples)
		t.Run(page, func(t *testing.T) { checkPage(t, root, path, page, examples) })
	}
	t.Logf("checked %d console blocks (%d commands)", blocks, commands)
	if blocks < minConsoleBlocks {
		t.Errorf("only %d console blocks in README.md and docs/, want at least %d", blocks, minConsoleBlocks)
	}
}

// checkPage runs one page's examples in a fresh directory that mirrors the
// repository: examples name repository files by their path from the root
// (docs/examples/small-grid.yaml), whatever folder their page is in.
func checkPage(t *testing.T, root, path, page string, examples []docExample) {
	dir := t.TempDir()
	for _, link := range []string{"traces", "cmd", "experiment", "docs"} {
		if err := os.Symlink(filepath.Join(root, link), filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	got := make([]string, len(examples))
	for i, ex := range examples {
		if needsLlama(ex.args) && !haveLlama {
			t.Logf("%s:%d: skipped (needs a llamacpp build): lessim %s", page, ex.line, strings.Join(ex.args, " "))
			got[i] = ex.want
			continue
		}
		got[i] = runCLI(t, "", ex.args...)
		if *rewrite {
			continue
		}
		if got := got[i]; got != ex.want {
			t.Errorf("%s:%d: lessim %s\n--- got\n%s--- %s says\n%s", page, ex.line, strings.Join(ex.args, " "), got, page, ex.want)
		}
	}
	if *rewrite {
		rewritePage(t, path, examples, got)
	}
}

// rewritePage replaces each example's output with what the command printed.
func rewritePage(t *testing.T, path string, examples []docExample, got []string) {
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

// proseNumber is a number in running text: digits, possibly with thousands
// separators or a decimal part, not part of a name (qwen3, A3B, iphone-18).
var proseNumber = regexp.MustCompile(`[0-9]+(?:[.,][0-9]+)*`)

// TestREADMENumbers: every number in README.md's prose (outside code
// blocks; in inline code too) is printed by one of its checked examples, so
// the README cannot quote a result the binary no longer prints. Numbers that
// are part of a name (qwen3, 35B-A3B, iphone-18-pro-max) are skipped, as are
// link targets and HTML tags.
func TestREADMENumbers(t *testing.T) {
	root := repoRoot(t)
	path := filepath.Join(root, "README.md")
	var checked strings.Builder
	for _, ex := range docExamples(t, path, "README.md") {
		checked.WriteString(strings.Join(ex.args, " ") + "\n" + ex.want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	linkTarget := regexp.MustCompile(`\]\([^)]*\)|<[^>]*>`)
	fenced := false
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		l = linkTarget.ReplaceAllString(l, "")
		for _, m := range proseNumber.FindAllStringIndex(l, -1) {
			if partOfName(l, m[0], m[1]) {
				continue
			}
			if n := l[m[0]:m[1]]; !strings.Contains(checked.String(), n) {
				t.Errorf("README.md:%d: %q is not printed by any checked example: quote it from a console block or drop it", i+1, n)
			}
		}
	}
}

// partOfName reports whether the number at l[i:j] belongs to a name
// (qwen3, 35B-A3B, iphone-18-pro-max, x86_64) rather than quoting a value
// (3GiB and 25% are values).
func partOfName(l string, i, j int) bool {
	if i > 0 && (isLetter(l[i-1]) || strings.IndexByte("-_/.", l[i-1]) >= 0) {
		return true
	}
	k := j
	for k < len(l) && isLetter(l[k]) {
		k++
	}
	return k < len(l) && strings.IndexByte("-_", l[k]) >= 0 || k > j && k < len(l) && '0' <= l[k] && l[k] <= '9'
}

func isLetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }
