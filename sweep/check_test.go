package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

// expandErr parses and expands src and returns the problems, failing the
// test when there are none.
func expandErr(t *testing.T, src string) *Problems {
	t.Helper()
	g, err := ParseGrid([]byte(src), "s.yaml")
	if err == nil {
		_, err = g.Expand()
	}
	return asProblems(t, err)
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

// asProblems is err as *Problems, failing the test when it is not.
func asProblems(t *testing.T, err error) *Problems {
	t.Helper()
	var p *Problems
	if !errors.As(err, &p) {
		t.Fatalf("want *Problems, got %v", err)
	}
	return p
}

// wantLines checks that p lists one problem at each of lines, in order,
// and pins their words as name (errgolden).
func wantLines(t *testing.T, name string, p *Problems, lines ...int) {
	t.Helper()
	var got []int
	for _, q := range p.List {
		got = append(got, q.Line)
	}
	if !slices.Equal(got, lines) {
		t.Errorf("%s: problems at lines %v, want %v:\n%v", name, got, lines, p)
	}
	errgolden.Check(t, name, p)
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
	wantLines(t, "unknown device", msg, 4)

	msg = expandErr(t, `base:
  model: {name: nope}
  trace: {synthetic: {tokens: 20}}
axes:
  cache.size: [1GiB, 2GiB]
`)
	wantLines(t, "unknown model", msg, 1)

	msg = expandErr(t, `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 20}}
axes:
  model.variant: [nope]
`)
	wantLines(t, "unknown variant", msg, 5)

	msg = expandErr(t, fmt.Sprintf(`base:
  device: {file: %s}
  trace: {synthetic: {tokens: 20}}
axes:
  cache.size: [1GiB, 2GiB, 3GiB]
`, text))
	wantLines(t, "device file", msg, 1)

	msg = expandErr(t, fmt.Sprintf(`base:
  device: {name: iphone-17-pro-max}
axes:
  trace.path: [%s, %s]
`, text, missing))
	wantLines(t, "trace files", msg, 4, 4)
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
	wantLines(t, "point problems", msg, 1, 1, 5, 6, 7, 8, 8, 8)
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
