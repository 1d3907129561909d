// Package errgolden pins the exact words of a package's errors in one golden
// file, testdata/errors.json (a JSON object: "TestName/case" → the error's
// text), so tests assert behaviour (that an error happened, its type and
// fields) and a reworded message is one rewrite (go test -rewrite-errors),
// not an edit in every test.
package errgolden

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/lessim/lessim/internal/atomicfile"
)

var rewrite = flag.Bool("rewrite-errors", false, "rewrite testdata/errors.json from the errors the tests get")

// Path is the golden file, relative to the package under test.
var Path = filepath.Join("testdata", "errors.json")

// tempDirs matches a test's temporary folder (t.TempDir()), which differs
// from run to run; the golden file has $TMP in its place.
var tempDirs = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[^/\s]*?[0-9]+/[0-9]+`)

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
	key := t.Name() + "/" + name
	if calls[t][name]++; calls[t][name] > 1 {
		key += fmt.Sprintf("#%d", calls[t][name])
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
		if want, err = read(); err != nil {
			t.Fatalf("error golden: %v (run with -rewrite-errors)", err)
		}
	}
	if w, ok := want[key]; !ok {
		t.Errorf("%s: no entry in %s (run with -rewrite-errors): error %q", key, Path, text)
	} else if w != text {
		t.Errorf("%s: error\n\t%s\nwant (%s)\n\t%s", key, text, Path, w)
	}
}

// read reads the golden file.
func read() (map[string]string, error) {
	data, err := os.ReadFile(Path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	return m, json.Unmarshal(data, &m)
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
	all, _ := read()
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, got)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(all) // NB: keys sorted
	if err == nil {
		err = os.MkdirAll(filepath.Dir(Path), 0o755)
	}
	if err == nil {
		err = atomicfile.WriteFile(Path, b.Bytes())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "errgolden:", err)
		return 1
	}
	return code
}

// Err is the error of a call that returns a value and an error, for
// Check(t, name, Err(f())).
func Err[T any](_ T, err error) error { return err }
