package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/traces"
)

// expandErr parses and expands src and returns the problems, failing the
// test when there are none.
func expandErr(t *testing.T, src string) string {
	t.Helper()
	g, err := ParseGrid([]byte(src), "s.yaml")
	if err == nil {
		_, err = g.Expand()
	}
	if err == nil {
		t.Fatalf("want problems for:\n%s", src)
	}
	return err.Error()
}

// writeTrace writes a small synthetic trace (16 tokens) to path.
func writeTrace(t *testing.T, path string) {
	t.Helper()
	s := experiment.DefaultSpec()
	s.Trace.Synthetic.Tokens = 16
	var in experiment.Inputs
	p, err := in.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := traces.WriteFile(path, p.Meta, traces.NewSliceSource(p.Steps)); err != nil {
		t.Fatal(err)
	}
}

// wantLines checks that msg holds each line of want.
func wantLines(t *testing.T, msg string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("problems lack %q:\n%s", w, msg)
		}
	}
}

// TestExpandChecksInputs: a device name, model, device file or trace file
// that cannot be found is a problem of the sweep file, listed with the line
// of the value (or of the base) that names it, before any point runs: no
// point is handed out to fail one by one.
func TestExpandChecksInputs(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	os.WriteFile(text, []byte("not a profile, not a trace\n"), 0o644)
	missing := filepath.Join(dir, "none.parquet")

	msg := expandErr(t, `base:
  trace: {synthetic: {tokens: 20}}
axes:
  device.name: [nope, iphone-17-pro-max]
  cache.size: [1GiB, 2GiB]
`)
	wantLines(t, msg, "1 problem\n", `s.yaml:4: 2 points, e.g. device.name="nope" (line 4), cache.size="1GiB" (line 5): unknown device "nope"`)

	msg = expandErr(t, `base:
  model: {name: nope}
  trace: {synthetic: {tokens: 20}}
axes:
  cache.size: [1GiB, 2GiB]
`)
	wantLines(t, msg, "1 problem\n", `s.yaml:1: 2 points, e.g. cache.size="1GiB" (line 5): unknown model "nope"`)

	msg = expandErr(t, `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 20}}
axes:
  model.variant: [nope]
`)
	wantLines(t, msg, `s.yaml:5: point model.variant="nope" (line 5): model minicpm-v-4.7-35b-a3b: unknown variant "nope"`)

	msg = expandErr(t, fmt.Sprintf(`base:
  device: {file: %s}
  trace: {synthetic: {tokens: 20}}
axes:
  cache.size: [1GiB, 2GiB, 3GiB]
`, text))
	wantLines(t, msg, "1 problem\n", "s.yaml:1: 3 points, e.g. cache.size=\"1GiB\" (line 5): "+text+": ")

	msg = expandErr(t, fmt.Sprintf(`base:
  device: {name: iphone-17-pro-max}
axes:
  trace.path: [%s, %s]
`, text, missing))
	wantLines(t, msg, "2 problems\n",
		"s.yaml:4: point trace.path=\""+text+"\" (line 4): trace: "+text+": not a Parquet file",
		"s.yaml:4: point trace.path=\""+missing+"\" (line 4): trace: open "+missing+": no such file")
}

// TestParseGridReportsPointProblemsBesideStructure: a misspelt axis and an
// empty axis no longer hide the problems of the points the other axes form:
// an unknown policy, a negative token count, a cache of 0% and an unknown
// model are reported in the same list, each once, at its line.
func TestParseGridReportsPointProblemsBesideStructure(t *testing.T) {
	msg := expandErr(t, `base:
  model: {name: nope}
  cache: {size: 0%}
axes:
  policy.name: [lru, fifo]
  policy.les.thresold: [0.5]
  cache.size: []
  trace.synthetic.tokens: [.nan, -1, 1.5]
`)
	wantLines(t, msg, "8 problems\n",
		`s.yaml:1: 2 points, e.g. policy.name="lru" (line 5), trace.synthetic.tokens=-1 (line 8): cache "0%": a percentage must be in (0, 100]`,
		`s.yaml:1: 2 points, e.g. policy.name="lru" (line 5), trace.synthetic.tokens=-1 (line 8): unknown model "nope"`,
		`s.yaml:5: point policy.name="fifo" (line 5), trace.synthetic.tokens=-1 (line 8): unknown policy "fifo"`,
		`s.yaml:6: axes: unknown field "policy.les.thresold"`,
		`s.yaml:7: axes: cache.size: empty list of values`,
		`s.yaml:8: trace.synthetic.tokens: .nan is not a finite number`,
		`s.yaml:8: trace.synthetic.tokens: 1.5 is a number, want an integer`,
		`s.yaml:8: 2 points, e.g. policy.name="lru" (line 5), trace.synthetic.tokens=-1 (line 8): trace.synthetic: tokens (-1)`)
}

// TestFailedPointsListedInOrder: the errors a Summary keeps are those of
// the failed points of lowest index, in index order, even when a later
// point finishes first (here point 0 waits until every other point ran).
func TestFailedPointsListedInOrder(t *testing.T) {
	src := `base:
  trace: {synthetic: {tokens: 20}}
axes:
  cache.size: [1GiB, 2GiB, 3GiB, 4GiB, 5GiB, 6GiB, 7GiB]
`
	others := make(chan struct{})
	var mu sync.Mutex
	left := 6
	run := func(_ context.Context, _ *experiment.Inputs, s experiment.Spec) (*experiment.Outcome, error) {
		if s.Cache.Size == "1GiB" {
			<-others
		} else {
			mu.Lock()
			if left--; left == 0 {
				close(others)
			}
			mu.Unlock()
		}
		return nil, fmt.Errorf("no run of %s", s.Cache.Size)
	}
	sum := runGrid(t, src, t.TempDir(), Options{Workers: 2, Run: run})
	want := []string{"point 0: no run of 1GiB", "point 1: no run of 2GiB", "point 2: no run of 3GiB", "point 3: no run of 4GiB", "point 4: no run of 5GiB"}
	if sum.Failed != 7 || !slices.Equal(sum.Errors, want) {
		t.Errorf("failed %d, errors %q, want 7 and %q", sum.Failed, sum.Errors, want)
	}
}
