package sweep

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
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
	wantLines(t, "problems", asProblems(t, err), 3, 4, 5, 6, 9, 10, 11, 12, 13, 14)
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
	wantLines(t, "non-finite", asProblems(t, err), 4, 4, 5, 6)
}

func TestParseGridEmpty(t *testing.T) {
	for _, src := range []string{"", "base: {}\n", "axes: {}\n", "- 1\n", "axes: [1\n"} {
		_, err := ParseGrid([]byte(src), "s.yaml")
		errgolden.Check(t, fmt.Sprintf("%q", src), err)
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
	// Each problem once, at the line of the value that gives it, for all
	// the points that have it (the point with both is in both).
	wantLines(t, "invalid points", asProblems(t, err), 5, 6)
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
	wantLines(t, "grouped", asProblems(t, err), 1)
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
	wantLines(t, "too large", asProblems(t, err), 2)
	src = "axes:\n"
	for _, f := range []string{"trace.synthetic.tokens", "trace.synthetic.seed", "trace.synthetic.prompt_tokens", "trace.synthetic.sequences",
		"trace.synthetic.skew", "trace.synthetic.reuse", "trace.synthetic.lookahead_recall", "trace.synthetic.lookahead_depth",
		"trace.synthetic.depth_penalty", "policy.les.top_n", "policy.les.threshold", "policy.les.depth", "policy.les.max_candidates",
		"policy.les.max_inflight_bytes", "context_tokens", "predictor.recall", "predictor.false_positives", "predictor.depth",
		"speculative.block", "speculative.accept"} {
		src += axis(f, 16, num)
	}
	_, err = ParseGrid([]byte(src), "huge.yaml")
	wantLines(t, "huge", asProblems(t, err), 2)
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
	wantLines(t, "base size", asProblems(t, err), 3)
	src := "axes:\n  policy.les.max_inflight_bytes: [1GiB, lots]\n"
	_, err = ParseGrid([]byte(src), "a.yaml")
	wantLines(t, "axis size", asProblems(t, err), 2)
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
	wantLines(t, "refused YAML", asProblems(t, err), 3, 4, 5, 8, 9)
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
