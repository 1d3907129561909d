package sweep

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lessim/lessim/experiment"
)

const smallGrid = `# a small grid
base:
  model: {name: minicpm-v-4.7-35b-a3b}
  trace: {synthetic: {tokens: 20, seed: 3}}
  device: {name: iphone-17-pro-max}
axes:
  policy.name: [lru, les]
  policy.les.threshold: [0.5, 0.8]
  cache.size: [1GiB, 2GiB, 3GiB]
`

func mustExpand(t *testing.T, src string) (*Grid, []Point) {
	t.Helper()
	g, err := ParseGrid([]byte(src), "sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return g, pts
}

func TestExpandOrderAndCollapse(t *testing.T) {
	g, pts := mustExpand(t, smallGrid)
	if len(g.Axes) != 3 || g.Axes[0].Field != "policy.name" || g.Axes[2].Line != 9 || g.Axes[2].ValueLines[1] != 9 {
		t.Fatalf("axes: %+v", g.Axes)
	}
	// lru has no threshold: its two thresholds collapse, so 3 lru + 6 les points.
	if len(pts) != 9 {
		t.Fatalf("got %d points, want 9", len(pts))
	}
	var got []string
	for i, p := range pts {
		if p.Index != i {
			t.Errorf("point %d has index %d", i, p.Index)
		}
		if p.ID != p.Spec.Hash() {
			t.Errorf("point %d: id %s is not the spec's hash", i, p.ID)
		}
		th := 0.0
		if p.Spec.Policy.LES != nil {
			th = p.Spec.Policy.LES.Threshold
		}
		got = append(got, p.Spec.Policy.Name+"/"+p.Spec.Cache.Size+"/"+strings.TrimRight(strings.TrimRight(jsonText(th), "0"), "."))
	}
	want := "lru/1GiB/ lru/2GiB/ lru/3GiB/ les/1GiB/0.5 les/2GiB/0.5 les/3GiB/0.5 les/1GiB/0.8 les/2GiB/0.8 les/3GiB/0.8"
	if strings.Join(got, " ") != want {
		t.Errorf("order:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	// Expansion is deterministic.
	_, again := mustExpand(t, smallGrid)
	if SweepID(again) != SweepID(pts) {
		t.Error("sweep id changed between two expansions")
	}
	// Absent fields take experiment.Parse's defaults.
	if pts[0].Spec.Layout != experiment.DefaultLayout || pts[0].Spec.Trace.Synthetic.Tokens != 20 || pts[0].Spec.Trace.Synthetic.Skew != experiment.DefaultSynthetic().Skew {
		t.Errorf("defaults not filled: %+v", pts[0].Spec)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestParseGridProblems(t *testing.T) {
	src := `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  cache: {sise: 3GiB}
  layout: 7
extra: 1
grid:
  cache.size: [2GiB]
axes:
  policy.name: [lru, 5]
  policy.les.treshold: [0.5]
  cache.size: []
  speculative: [{block: 4, accept: high}]
  layout: per-expert
  cache.size: [1GiB]
`
	_, err := ParseGrid([]byte(src), "bad.yaml")
	var probs *Problems
	if !errors.As(err, &probs) {
		t.Fatalf("want *Problems, got %v", err)
	}
	want := `bad.yaml: 10 problems
  bad.yaml:3: base.cache: unknown field "sise" (valid: size, bytes)
  bad.yaml:4: base.layout: 7 is a number, want a string
  bad.yaml:5: unknown key "extra" (valid: base, axes)
  bad.yaml:6: grid: lessim writes a single value here when it records a sweep (ignored when read back), got a mapping; the grid's fields and values go under axes
  bad.yaml:9: policy.name: 5 is a number, want a string
  bad.yaml:10: axes: unknown field "policy.les.treshold": policy.les has top_n, threshold, max_candidates, depth, max_inflight_bytes, no_prefetch
  bad.yaml:11: axes: cache.size: empty list of values: the grid would have no points
  bad.yaml:12: speculative.accept: high is a string, want a number
  bad.yaml:13: axes: layout: values must be a list, e.g. [a, b]
  bad.yaml:14: axes: duplicate key "cache.size" (line 14, first at 11)`
	if err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

// TestParseGridNonFinite: YAML's .nan and .inf, which no spec (JSON) can
// hold, are refused with their field and line like any malformed value,
// in the same report as the invalid points the remaining values form.
func TestParseGridNonFinite(t *testing.T) {
	src := `base:
  trace: {synthetic: {tokens: 20}}
axes:
  trace.synthetic.skew: [.nan, -1, 1.2]
  trace.synthetic.reuse: [-.inf, 0.5]
  speculative: [{block: 4, accept: .nan, drafter: {kind: mtp}}, null]
`
	_, err := ParseGrid([]byte(src), "nan.yaml")
	// NB: the point's problem is listed at the line of the value that
	// gives it (skew -1, line 4), among the malformed values.
	want := `nan.yaml: 4 problems
  nan.yaml:4: trace.synthetic.skew: .nan is not a finite number: a spec holds finite numbers only
  nan.yaml:4: point trace.synthetic.skew=-1 (line 4), trace.synthetic.reuse=0.5 (line 5), speculative=null (line 6): trace.synthetic.skew: must be a finite number in [0, 10] (got -1)
  nan.yaml:5: trace.synthetic.reuse: -.inf is not a finite number: a spec holds finite numbers only
  nan.yaml:6: speculative.accept: .nan is not a finite number: a spec holds finite numbers only`
	if err == nil || err.Error() != want || strings.Contains(err.Error(), "unsupported value") {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
}

func TestParseGridEmpty(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "empty sweep file"},
		{"base: {}\n", "no axes"},
		{"axes: {}\n", "empty grid"},
		{"- 1\n", "a mapping with base and axes"},
		{"axes: [1\n", "yaml:"},
	} {
		_, err := ParseGrid([]byte(c.src), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
}

func TestExpandInvalidPoints(t *testing.T) {
	src := `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  speculative: {drafter: {kind: free}}
axes:
  layout: [per-expert, floppy]
  speculative.accept: [0.5, 1.5]
`
	g, err := ParseGrid([]byte(src), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Expand()
	if err == nil {
		t.Fatal("want an error")
	}
	// Each problem once, at the line of the value that gives it, for all
	// the points that have it (the point with both is in both).
	for _, want := range []string{"2 problems", `s.yaml:5: 2 points, e.g. layout="floppy" (line 5)`, `s.yaml:6: 2 points, e.g. layout="per-expert" (line 5), speculative.accept=1.5 (line 6)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestResolvedConfigParsesBack(t *testing.T) {
	g, pts := mustExpand(t, smallGrid)
	cfg, err := g.ResolvedConfig(pts, "9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	g2, pts2 := mustExpand(t, string(cfg))
	if SweepID(pts2) != SweepID(pts) || len(g2.Axes) != len(g.Axes) {
		t.Errorf("resolved config expands differently:\n%s", cfg)
	}
	for _, want := range []string{"lessim_version: 9.9.9", "sweep_id: " + SweepID(pts), "policy.name: [lru, les]"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("resolved config lacks %q:\n%s", want, cfg)
		}
	}
}

func TestExpandGroupsTheSameError(t *testing.T) {
	src := `base:
  layout: floppy
axes:
  policy.name: [lru, les, lfu]
`
	g, err := ParseGrid([]byte(src), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Expand()
	if err == nil || !strings.Contains(err.Error(), "1 problem\n") || !strings.Contains(err.Error(), "3 points, e.g. policy.name=\"lru\" (line 4)") {
		t.Errorf("got %v", err)
	}
	t.Log(err)
}

// TestGridTooLarge: a grid above MaxPoints is refused by ParseGrid with its
// size, before anything is expanded, and its size is computed without
// overflow (here 16^20 points, beyond int64).
func TestGridTooLarge(t *testing.T) {
	axis := func(field string, k int, value func(i int) string) string {
		vals := make([]string, k)
		for i := range vals {
			vals[i] = value(i)
		}
		return "  " + field + ": [" + strings.Join(vals, ", ") + "]\n"
	}
	num := func(i int) string { return strconv.Itoa(i + 1) }
	src := "axes:\n" + axis("trace.synthetic.tokens", 100, num) + axis("trace.synthetic.seed", 100, num) + axis("cache.size", 101, func(i int) string { return num(i) + "GiB" })
	_, err := ParseGrid([]byte(src), "big.yaml")
	want := "big.yaml:2: axes: the grid has 1.01e+06 points (100 × 100 × 101): more than the 1000000 a sweep expands; split it into several sweep files"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	src = "axes:\n"
	for _, f := range []string{"trace.synthetic.tokens", "trace.synthetic.seed", "trace.synthetic.prompt_tokens", "trace.synthetic.sequences",
		"trace.synthetic.skew", "trace.synthetic.reuse", "trace.synthetic.lookahead_recall", "trace.synthetic.lookahead_depth",
		"trace.synthetic.depth_penalty", "policy.les.top_n", "policy.les.threshold", "policy.les.depth", "policy.les.max_candidates",
		"policy.les.max_inflight_bytes", "context_tokens", "predictor.recall", "predictor.false_positives", "predictor.depth",
		"speculative.block", "speculative.accept"} {
		src += axis(f, 16, num)
	}
	if _, err := ParseGrid([]byte(src), "huge.yaml"); err == nil || !strings.Contains(err.Error(), "the grid has 1.209e+24 points (16 × 16") {
		t.Errorf("got %v", err)
	}
	// Below the cap, a large grid parses (Expand would run it).
	src = "axes:\n" + axis("trace.synthetic.tokens", 1000, num) + axis("cache.size", 1000, func(i int) string { return num(i) + "GiB" })
	if g, err := ParseGrid([]byte(src), "ok.yaml"); err != nil {
		t.Error(err)
	} else if n, err := g.size(); n != MaxPoints || err != nil {
		t.Errorf("size %d, %v; want %d", n, err, MaxPoints)
	}
}

// TestByteCountsAsSizes: a byte-count field (max_inflight_bytes, a drafter's
// bytes) may be given as a size, in the base, an axis or a whole group, and
// gives the points the integer would; a size that does not parse is a
// problem with its line.
func TestByteCountsAsSizes(t *testing.T) {
	grid := func(inflight, drafter string) string {
		return "base:\n  trace: {synthetic: {tokens: 20}}\n  policy: {name: les, les: {max_inflight_bytes: " + inflight + "}}\n" +
			"axes:\n  speculative: [{block: 2, accept: 0.5, drafter: {kind: explicit, bytes: " + drafter + "}}]\n" +
			"  policy.les.top_n: [4, 8]\n"
	}
	_, sized := mustExpand(t, grid("64MiB", "400MB"))
	_, ints := mustExpand(t, grid("67108864", "400000000"))
	if len(sized) != 2 || len(ints) != 2 {
		t.Fatalf("%d and %d points", len(sized), len(ints))
	}
	for i := range sized {
		if sized[i].ID != ints[i].ID {
			t.Errorf("point %d: id %s with sizes, %s with integers", i, sized[i].ID, ints[i].ID)
		}
	}
	if b := sized[0].Spec.Policy.LES.MaxInflightBytes; b != 64<<20 {
		t.Errorf("max_inflight_bytes %d", b)
	}
	_, err := ParseGrid([]byte(grid("64MiBs", "400MB")), "s.yaml")
	if err == nil || !strings.Contains(err.Error(), "s.yaml:3: base.policy.les.max_inflight_bytes: 64MiBs is not a byte count (an integer, or a size such as 64MiB)") {
		t.Errorf("got %v", err)
	}
	src := "axes:\n  policy.les.max_inflight_bytes: [1GiB, lots]\n"
	if _, err := ParseGrid([]byte(src), "a.yaml"); err == nil || !strings.Contains(err.Error(), "a.yaml:2: policy.les.max_inflight_bytes: lots is not a byte count") {
		t.Errorf("got %v", err)
	}
}

// TestParseGridRefusedYAML checks that what yaml.v3 would take silently (a
// key written twice, a merge key, a second document) is a problem with its
// line, listed with the file's other problems.
func TestParseGridRefusedYAML(t *testing.T) {
	src := `base:
  model: {name: minicpm-v-4.7-35b-a3b}
  cache: {size: 1GiB, size: 2GiB}
  layout: 7
base: {}
axes:
  policy.name: [lru, les]
  trace: [{synthetic: {<<: {tokens: 5}}}]
---
axes:
  cache.size: [1GiB]
`
	_, err := ParseGrid([]byte(src), "bad.yaml")
	want := `bad.yaml: 5 problems
  bad.yaml:3: base.cache: duplicate key "size" (line 3, first at 3)
  bad.yaml:4: base.layout: 7 is a number, want a string
  bad.yaml:5: duplicate key "base" (line 5, first at 1)
  bad.yaml:8: axes.trace[0].synthetic: merge keys (<<) are not supported: write the fields out (line 8)
  bad.yaml:9: a sweep file holds one YAML document; found another at line 9`
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

// TestExpandDropsPredictorWhereUnread: a base's stated predictor is dropped
// from the points whose policy reads no lookahead scores (experiment
// refuses it there: it would change only the hash).
func TestExpandDropsPredictorWhereUnread(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.parquet")
	writeTrace(t, trace) // NB: a real trace: Expand reads every trace file's header
	_, pts := mustExpand(t, `base:
  trace: {path: `+trace+`}
  predictor: {recall: 0.8}
  device: {name: iphone-17-pro-max}
axes:
  policy.name: [lru, les]
`)
	if len(pts) != 2 || pts[0].Spec.Predictor != nil || pts[1].Spec.Predictor == nil {
		t.Fatalf("points: %+v", pts)
	}
}
