// Package errgolden pins the exact words of a package's errors in one golden
// file, testdata/errors.golden, so tests assert behaviour (that an error
// happened, its type and fields) and a reworded message is one rewrite
// (go test -run X -rewrite-errors), not an edit in every test.
//
// The file holds one entry per case, in name order, a blank line after each:
//
//	## TestName/case
//	the error's text (several lines if it has them)
package errgolden

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lessim/lessim/internal/atomicfile"
)

var rewrite = flag.Bool("rewrite-errors", false, "rewrite testdata/errors.golden from the errors the tests get")

// tempDirs matches a test's temporary folder (t.TempDir()), which differs
// from run to run; the golden file has $TMP in its place.
var tempDirs = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[^/\s]*?[0-9]+/[0-9]+`)

// Path is the golden file, relative to the package under test.
var Path = filepath.Join("testdata", "errors.golden")

var (
	mu    sync.Mutex
	want  map[string]string // read once
	got   = map[string]string{}
	calls = map[testing.TB]map[string]int{} // checks per name, per test
)

// Check fails t unless err is non-nil and its text is the golden entry
// t.Name() + "/" + name; the second and later checks of one name in one
// test (a loop) are name#2, name#3, ... With -rewrite-errors it records
// the text instead; Main then writes the file.
func Check(t testing.TB, name string, err error) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if calls[t] == nil {
		calls[t] = map[string]int{}
	}
	calls[t][name]++
	key := t.Name() + "/" + name
	if n := calls[t][name]; n > 1 {
		key += fmt.Sprintf("#%d", n)
	}
	if err == nil {
		t.Errorf("%s: no error", key)
		return
	}
	text := tempDirs.ReplaceAllString(err.Error(), "$$TMP")
	got[key] = text
	if *rewrite {
		return
	}
	if want == nil {
		want = read(t)
	}
	if w, ok := want[key]; !ok {
		t.Errorf("%s: no entry in %s (run with -rewrite-errors): error %q", key, Path, text)
	} else if w != text {
		t.Errorf("%s: error\n\t%s\nwant (%s)\n\t%s", key, text, Path, w)
	}
}

// read parses the golden file.
func read(t testing.TB) map[string]string {
	m, err := parse()
	if err != nil {
		t.Fatalf("error golden: %v (run with -rewrite-errors)", err)
	}
	return m
}

// parse reads the golden file's entries: a line "## key" starts one, the
// lines up to the next such line (blank lines at the end dropped) are its text.
func parse() (map[string]string, error) {
	data, err := os.ReadFile(Path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	key := ""
	var lines []string
	flush := func() {
		if key != "" {
			for len(lines) > 0 && lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			m[key] = strings.Join(lines, "\n")
		}
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, ok := strings.CutPrefix(l, "## "); ok {
			flush()
			key, lines = k, nil
		} else {
			lines = append(lines, l)
		}
	}
	flush()
	return m, nil
}

// Main runs the tests and, with -rewrite-errors, writes the errors Check saw
// into the golden file (entries of tests that did not run are kept; delete
// the file first to drop stale ones); call it from TestMain:
// os.Exit(errgolden.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if !*rewrite || len(got) == 0 {
		return code
	}
	all, _ := parse()
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, got)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(all)) {
		b.WriteString("## " + k + "\n" + all[k] + "\n\n")
	}
	if err := os.MkdirAll(filepath.Dir(Path), 0o755); err != nil {
		return 1
	}
	if err := atomicfile.WriteFile(Path, []byte(b.String())); err != nil {
		return 1
	}
	return code
}

// Err is the error of a call that returns a value and an error, for
// Check(t, name, Err(f())).
func Err[T any](_ T, err error) error { return err }
