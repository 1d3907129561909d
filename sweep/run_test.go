package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// testGrid is 2 traces × 3 policies × 2 caches = 12 points of small runs.
const testGrid = `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 24}}
  device: {name: iphone-17-pro-max}
axes:
  trace.synthetic.seed: [1, 2]
  policy.name: [lru, oracle, les]
  cache.size: [1GiB, 2GiB]
`

func runGrid(t *testing.T, src, out string, opt Options) *Summary {
	t.Helper()
	g, pts := mustExpand(t, src)
	cfg, err := g.ResolvedConfig(pts, "test")
	if err != nil {
		t.Fatal(err)
	}
	opt.Out, opt.Version, opt.Config = out, "test", cfg
	sum, err := Run(context.Background(), g.Name, pts, opt)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// rowSet reads a results folder as a sorted list of rows, each the text of
// every column, and fails on duplicate point ids.
func rowSet(t *testing.T, dir string) []string {
	t.Helper()
	tb, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(slices.Values(tb.Names))
	seen := map[string]bool{}
	var rows []string
	for i := range tb.Len() {
		id := tb.Str("point_id", i)
		if seen[id] {
			t.Errorf("%s: point %s appears twice", dir, id)
		}
		seen[id] = true
		var b strings.Builder
		for _, n := range names {
			b.WriteString(n + "=" + tb.Str(n, i) + "\t")
		}
		rows = append(rows, b.String())
	}
	slices.Sort(rows)
	return rows
}

func TestColumnsCoverResultAndSpec(t *testing.T) {
	names := ColumnNames()
	have := map[string]bool{}
	for _, n := range names {
		if have[n] {
			t.Errorf("column %s twice", n)
		}
		have[n] = true
	}
	rt := reflect.TypeFor[sim.Result]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _ := jsonName(f)
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
			et := f.Type.Elem()
			for j := range et.NumField() {
				en, _ := jsonName(et.Field(j))
				if !have[name+"."+en] {
					t.Errorf("Result.%s.%s has no column %s.%s", f.Name, et.Field(j).Name, name, en)
				}
			}
			continue
		}
		if !have[name] {
			t.Errorf("Result.%s has no column %s", f.Name, name)
		}
	}
	for _, want := range []string{"point_id", "spec.policy.name", "spec.policy.les.threshold", "spec.cache.bytes",
		"spec.trace.synthetic.seed", "spec.device.profile.flash.lanes", "spec.speculative.block", "spec.layout"} {
		if !have[want] {
			t.Errorf("no column %s", want)
		}
	}
}

func TestSweepWritesEveryPointOnce(t *testing.T) {
	dir := t.TempDir()
	sum := runGrid(t, testGrid, dir, Options{PartRows: 5})
	if sum.Ran != 12 || sum.Failed != 0 || len(sum.Parts) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	rows := rowSet(t, dir)
	if len(rows) != 12 {
		t.Fatalf("%d rows, want 12", len(rows))
	}
	tb, _ := reports.ReadResults(dir)
	for i := range tb.Len() {
		if v, ok := tb.Num("tokens_per_sec", i); !ok || v <= 0 {
			t.Errorf("row %d: tokens_per_sec %v %v", i, v, ok)
		}
		if tb.Str("spec.device.profile.name", i) != "iphone-17-pro-max" || tb.Str("error", i) != "" {
			t.Errorf("row %d: not resolved or failed: %q", i, tb.Str("error", i))
		}
		if tb.Str("source", i) != sim.SourceSimulated {
			t.Errorf("row %d: source %q", i, tb.Str("source", i))
		}
	}
	// A rerun finds everything done and writes nothing.
	again := runGrid(t, testGrid, dir, Options{})
	if again.Ran != 0 || again.Skipped != 12 || len(again.Parts) != 0 {
		t.Errorf("rerun summary %+v", again)
	}
	for _, f := range []string{ManifestFile, ConfigFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestShardsMergeToTheUnshardedRows(t *testing.T) {
	whole, sharded := t.TempDir(), t.TempDir()
	runGrid(t, testGrid, whole, Options{})
	mine := 0
	for i := range 3 {
		sum := runGrid(t, testGrid, sharded, Options{Shard: i, Shards: 3, Workers: 1})
		mine += sum.Mine
	}
	if mine != 12 {
		t.Errorf("shards hold %d points, want 12", mine)
	}
	a, b := rowSet(t, whole), rowSet(t, sharded)
	if !slices.Equal(a, b) {
		t.Errorf("sharded rows differ from the unsharded run (%d vs %d rows)", len(b), len(a))
	}
}

func TestRefusesForeignFolders(t *testing.T) {
	dir := t.TempDir()
	runGrid(t, testGrid, dir, Options{})
	other := strings.Replace(testGrid, "[1GiB, 2GiB]", "[1GiB, 3GiB]", 1)
	g, pts := mustExpand(t, other)
	_, err := Run(context.Background(), g.Name, pts, Options{Out: dir})
	errgolden.Check(t, "another-grid", err)
	// A folder of another results format.
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.FormatVersion = 1
	js, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, ManifestFile), js, 0o644)
	g, pts = mustExpand(t, testGrid)
	_, err = Run(context.Background(), g.Name, pts, Options{Out: dir})
	errgolden.Check(t, "old-format", err)
	// Parts without a manifest.
	os.Remove(filepath.Join(dir, ManifestFile))
	_, err = Run(context.Background(), g.Name, pts, Options{Out: dir})
	errgolden.Check(t, "no-manifest", err)
	// An output folder that cannot be created.
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	_, err = Run(context.Background(), g.Name, pts, Options{Out: filepath.Join(file, "results")})
	errgolden.Check(t, "unwritable", err)
}

func TestFailedPointsGetRows(t *testing.T) {
	dir := t.TempDir()
	// 1 MiB cannot hold one layer's experts: every point fails in Resolve.
	src := strings.Replace(testGrid, "[1GiB, 2GiB]", "[1MiB, 1GiB]", 1)
	sum := runGrid(t, src, dir, Options{})
	if sum.Failed != 6 || len(sum.Errors) != 5 {
		t.Fatalf("summary %+v", sum)
	}
	tb, _ := reports.ReadResults(dir)
	failed := 0
	for i := range tb.Len() {
		if e := tb.Str("error", i); e != "" {
			failed++
			if !strings.Contains(e, "too small") {
				t.Errorf("error %q", e)
			}
			if _, ok := tb.Num("tokens_per_sec", i); ok {
				t.Error("a failed point has a result")
			}
		}
	}
	if failed != 6 {
		t.Errorf("%d failed rows, want 6", failed)
	}
	// A rerun does not retry them but still reports them (a Job retried
	// after a failure must not succeed on the same folder).
	again := runGrid(t, src, dir, Options{})
	if again.Ran != 0 || again.Failed != 6 || again.FailedBefore != 6 || len(again.Errors) != 5 ||
		!strings.Contains(again.Errors[0], "too small") || !strings.Contains(again.Errors[0], "not retried") {
		t.Errorf("rerun summary %+v", again)
	}
}

// TestSharedStepsUnchanged runs every policy concurrently on one Inputs and
// checks that the trace they share is byte-identical afterwards.
func TestSharedStepsUnchanged(t *testing.T) {
	var in experiment.Inputs
	base := experiment.DefaultSpec()
	base.Trace.Synthetic.Tokens = 24
	base.Cache.Size = "1GiB"
	p, err := in.Resolve(base)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(p.Steps)
	done := make(chan error)
	names := []string{"lru", "lfu", "les", "oracle", "pinned-hot", "ondemand"}
	for _, n := range names {
		go func() {
			s := base
			s.Policy = experiment.Policy{Name: n}
			_, err := Simulate(context.Background(), &in, s)
			done <- err
		}()
	}
	for range names {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	after, _ := json.Marshal(p.Steps)
	if string(before) != string(after) {
		t.Error("running policies changed the shared trace steps")
	}
}

// TestEachTraceReadOnce runs 2 trace files × 3 policies × 2 caches on 2
// workers and counts the file reads: one per trace.
func TestEachTraceReadOnce(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for seed := range 2 {
		s := experiment.DefaultSpec()
		s.Trace.Synthetic.Tokens, s.Trace.Synthetic.Seed = 16, uint64(seed+1)
		var in experiment.Inputs
		p, err := in.Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("t%d.parquet", seed))
		if err := traces.WriteFile(path, p.Meta, traces.NewSliceSource(p.Steps)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	src := fmt.Sprintf(`base: {device: {name: iphone-17-pro-max}}
axes:
  policy.name: [lru, oracle, les]
  trace.path: [%s, %s]
  cache.size: [1GiB, 2GiB]
`, paths[0], paths[1])
	var mu sync.Mutex
	reads := map[string]int{}
	opt := Options{Workers: 2, NewInputs: func() *experiment.Inputs {
		return &experiment.Inputs{ReadTrace: func(path string) (*experiment.LoadedTrace, error) {
			mu.Lock()
			reads[path]++
			mu.Unlock()
			return experiment.ReadTraceFile(path)
		}}
	}}
	sum := runGrid(t, src, filepath.Join(dir, "out"), opt)
	if sum.Ran != 12 || sum.Failed != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if len(reads) != 2 || reads[paths[0]] != 1 || reads[paths[1]] != 1 {
		t.Errorf("trace reads %v, want each file once", reads)
	}
}

// TestRunRefusesBadOptions: negative workers (once a makechan panic after
// the manifest was written) and part rows are refused before the folder is
// created.
func TestRunRefusesBadOptions(t *testing.T) {
	g, pts := mustExpand(t, testGrid)
	out := filepath.Join(t.TempDir(), "r")
	for _, opt := range []Options{{Workers: -1}, {PartRows: -1}, {Shard: 2, Shards: 2}} {
		opt.Out = out
		if _, err := Run(context.Background(), g.Name, pts, opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%+v: the folder was created (stat: %v)", opt, err)
		}
	}
}

// TestPartsAreByteIdentical runs a grid twice on several workers whose
// points finish in a shuffled order (each sleeps a random time) and checks
// that the parts are byte-identical: which points a part holds does not
// depend on timing.
func TestPartsAreByteIdentical(t *testing.T) {
	var dirs [2]string
	for i := range dirs {
		dirs[i] = t.TempDir()
		run := func(ctx context.Context, in *experiment.Inputs, s experiment.Spec) (*experiment.Outcome, error) {
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
			return Simulate(ctx, in, s)
		}
		runGrid(t, testGrid, dirs[i], Options{Workers: 4, PartRows: 4, Run: run})
	}
	a, _ := Parts(dirs[0])
	b, _ := Parts(dirs[1])
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("parts %v and %v, want 3 each", a, b)
	}
	for i := range a {
		x, _ := os.ReadFile(a[i])
		y, _ := os.ReadFile(b[i])
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs of the same grid", filepath.Base(a[i]))
		}
	}
}
