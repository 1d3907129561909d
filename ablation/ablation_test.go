package ablation

import (
	"bytes"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

// small is a short ablation on the embedded defaults with a 3 GiB cache.
func small(opts map[string]string) Settings {
	s := DefaultSettings()
	s.Base = map[string]string{"tokens": "120", "cache": "3GiB"}
	for k, v := range opts {
		s.Base[k] = v
	}
	return s
}

func mustRun(t *testing.T, s Settings) *Ablation {
	t.Helper()
	var in experiment.Inputs
	a, err := Run(&in, s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// changedFields are the spec fields a step's changes name, and the options
// that apply to spec (WithModelOnly ones dropped without a model).
func changedFields(st Step, spec experiment.Spec) []string {
	var f []string
	for _, c := range st.Changes {
		if !(c.WithModelOnly && spec.Model == nil) {
			f = append(f, c.Field)
		}
	}
	return f
}

// checkNamedOnly: every field of the resolved-spec diff lies under a field
// the step names, and every named field changed.
func checkNamedOnly(t *testing.T, a *Ablation) {
	t.Helper()
	for i, r := range a.Rows {
		if r.Outcome == nil || r.Prev < 0 {
			continue
		}
		fields := changedFields(r.Step, a.Rows[r.Prev].Outcome.Spec)
		if len(r.Changes) == 0 {
			t.Errorf("row %d (%s): spec identical to its predecessor", i, r.Step.Key)
		}
		for _, d := range r.Changes {
			ok := false
			for _, f := range fields {
				ok = ok || Under(d.Field, f)
			}
			if !ok {
				t.Errorf("row %d (%s): %s changed, but the step names only %v", i, r.Step.Key, d, fields)
			}
		}
		for _, f := range fields {
			hit := false
			for _, d := range r.Changes {
				hit = hit || Under(d.Field, f)
			}
			if !hit {
				t.Errorf("row %d (%s): named field %s did not change", i, r.Step.Key, f)
			}
		}
	}
}

// TestStepsDifferOnlyInNamedFields: each step's resolved spec differs from
// its predecessor's exactly in the fields its changes name (and below them),
// and the first step differs from the base spec only in its own.
func TestStepsDifferOnlyInNamedFields(t *testing.T) {
	s := small(map[string]string{"device": "iphone-18-pro-max"})
	a := mustRun(t, s)
	if len(a.Rows) != 8 {
		t.Fatalf("%d rows, want 5 steps, 2 draft reuse rows and a reference", len(a.Rows))
	}
	checkNamedOnly(t, a)
	want := []string{"stock", "lookahead", "storage", "mixed", "speculative", "speculative-draft-reuse-0", "speculative-draft-reuse-1", "oracle"}
	for i, r := range a.Rows {
		if r.Step.Key != want[i] || r.Outcome == nil {
			t.Fatalf("row %d: %s (skipped %q), want %s run", i, r.Step.Key, r.Skipped, want[i])
		}
	}
	// Step 1 against the base: built specs, before resolution.
	base, err := experiment.FromOptions(s.Base)
	if err != nil {
		t.Fatal(err)
	}
	if err := experiment.Apply(&base, map[string]string{"seed": "1"}); err != nil {
		t.Fatal(err)
	}
	built, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := Leaves(base)
	l1, _ := Leaves(built[0].Spec)
	for _, d := range Diff(lb, l1) {
		ok := false
		for _, f := range changedFields(built[0].Step, base) {
			ok = ok || Under(d.Field, f)
		}
		if !ok {
			t.Errorf("stock: %s changed from the base, not named", d)
		}
	}
	// The specs say what the steps are meant to be.
	r := a.Rows
	if s := r[0].Outcome.Spec; s.Policy.Name != "ondemand" || s.Layout != "gguf-mmap" || s.CachedFirst || s.Model.Variant != "q4_k_m" || s.Speculative != nil {
		t.Errorf("stock spec: %+v", s)
	}
	if s := r[3].Outcome.Spec; s.ExpertQuant != MixedQuant || s.Model.Variant != StockVariant {
		t.Errorf("mixed spec: expert_quant %q, variant %q", s.ExpertQuant, s.Model.Variant)
	}
	if s := r[4].Outcome.Spec; s.Policy.Name != "les" || s.Layout != "per-expert" || !s.CachedFirst || s.ExpertQuant != MixedQuant ||
		s.Speculative == nil || s.Speculative.Block != 4 || s.Speculative.Accept != 0.7 || s.Speculative.AcceptSeed != 1 || *s.Speculative.Drafter != (experiment.Drafter{Kind: DefaultDrafter}) ||
		s.Speculative.DraftReuse != nil {
		t.Errorf("speculative spec: %+v", s)
	}
	// The draft reuse rows: the speculative step with the reuse set, built
	// on step 4 like it; fully shared drafts load fewer experts.
	for i, v := range DraftReuseBounds {
		row := r[5+i]
		if sp := row.Outcome.Spec.Speculative; sp == nil || sp.DraftReuse == nil || *sp.DraftReuse != v || row.Prev != 3 || row.Step.Of != "speculative" {
			t.Errorf("draft reuse %v row: builds on %d, speculative %+v", v, row.Prev, sp)
		}
	}
	if zero, one := r[5].Outcome.Result, r[6].Outcome.Result; zero.FlashBytes <= one.FlashBytes || zero.TokensPerSec >= one.TokensPerSec {
		t.Errorf("draft reuse 0: %d flash bytes, %.3f tok/s; reuse 1: %d, %.3f", zero.FlashBytes, zero.TokensPerSec, one.FlashBytes, one.TokensPerSec)
	}
}

// TestSpeedupsAndBaseline: speedups are tokens/s over the step built on and
// over the first step; the first step and the reference have no "previous".
func TestSpeedupsAndBaseline(t *testing.T) {
	a := mustRun(t, small(nil))
	base := a.Rows[0].Outcome.Result.TokensPerSec
	for i, r := range a.Rows {
		tps := r.Outcome.Result.TokensPerSec
		if got := r.VsBaseline; got != tps/base {
			t.Errorf("row %d: vs baseline %v, want %v", i, got, tps/base)
		}
		switch {
		case i == 0 || r.Step.Reference && r.Step.Of == "":
			if r.VsPrevious != 0 {
				t.Errorf("row %d: vs previous %v, want none", i, r.VsPrevious)
			}
		default:
			if want := tps / a.Rows[r.Prev].Outcome.Result.TokensPerSec; r.VsPrevious != want {
				t.Errorf("row %d: vs previous %v, want %v", i, r.VsPrevious, want)
			}
		}
	}
}

// TestReproducesEachSpec: every row's result equals a fresh experiment.Run of
// its resolved spec (no shared state between the parallel runs leaks into a
// result), and two ablations print the same bytes.
func TestReproducesEachSpec(t *testing.T) {
	s := small(map[string]string{"device": "ipad-pro-m4"})
	s.Seed = 7
	a := mustRun(t, s)
	for i, r := range a.Rows {
		o, err := experiment.Run(r.Outcome.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if o.Hash != r.Outcome.Hash {
			t.Errorf("row %d: resolving the resolved spec changed its hash", i)
		}
		var x, y bytes.Buffer
		if err := WriteJSON(&x, &Ablation{Rows: []Row{{Outcome: o}}}); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&y, &Ablation{Rows: []Row{{Outcome: r.Outcome}}}); err != nil {
			t.Fatal(err)
		}
		if x.String() != y.String() {
			t.Errorf("row %d (%s): the result differs from a fresh run of its spec", i, r.Step.Key)
		}
	}
	if got := a.Rows[0].Outcome.Spec.Trace.Synthetic.Seed; got != 7 {
		t.Errorf("trace seed %d, want 7", got)
	}
	if got := a.Rows[4].Outcome.Spec.Speculative.AcceptSeed; got != 7 {
		t.Errorf("accept seed %d, want 7", got)
	}
	var first, second bytes.Buffer
	if err := WriteJSON(&first, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&second, mustRun(t, s)); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Error("two runs of one ablation differ")
	}
}

// writeTrace writes a synthetic trace of the default model to a file.
func writeTrace(t *testing.T, tokens int) string {
	t.Helper()
	return writeVariantTrace(t, "", tokens)
}

// writeVariantTrace writes a synthetic trace of the default model in variant
// ("" = its default) to a file.
func writeVariantTrace(t *testing.T, variant string, tokens int) string {
	t.Helper()
	m, err := devices.LookupModel(experiment.DefaultModel, variant)
	if err != nil {
		t.Fatal(err)
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.Seed = tokens, 5
	meta, steps, err := traces.Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTraceFileRequantizes: on a trace file, whose metadata holds the model,
// step 4 re-quantizes the trace's model's experts to Q3_K (expert_quant) and
// step 5 builds on it; the table says which quant each step ran with.
func TestTraceFileRequantizes(t *testing.T) {
	path := writeTrace(t, 60)
	a := mustRun(t, Settings{Base: map[string]string{"trace": path, "cache": "3GiB"}, Seed: 3, SpecBlock: 3, SpecAccept: 0.5, Drafter: "explicit", DrafterBytes: 300e6, DrafterFLOPs: 6e8, Reference: false})
	if len(a.Rows) != 7 {
		t.Fatalf("%d rows, want 5 and 2 draft reuse rows (no reference)", len(a.Rows))
	}
	mixed := a.Rows[3]
	if mixed.Outcome == nil || mixed.Prev != 2 {
		t.Fatalf("mixed step: skipped %q, builds on %d", mixed.Skipped, mixed.Prev)
	}
	if s := mixed.Outcome.Spec; s.ExpertQuant != MixedQuant || s.Model != nil || s.Trace.Path != path {
		t.Errorf("mixed spec: expert_quant %q, model %v, trace %q", s.ExpertQuant, s.Model, s.Trace.Path)
	}
	// Reference: DESIGN.md "Reference model": one expert is 1,351,680 bytes in Q3_K.
	for i, l := range mixed.Outcome.Model.Layers {
		if l.ExpertBytes != 1_351_680 {
			t.Fatalf("mixed step: layer %d expert bytes %d, want 1351680", i, l.ExpertBytes)
		}
	}
	if got, before := mixed.Outcome.Result.FlashBytesPerToken, a.Rows[2].Outcome.Result.FlashBytesPerToken; got >= before {
		t.Errorf("mixed step moves %v flash bytes per token, step 3 %v: want fewer", got, before)
	}
	if spec := a.Rows[4]; spec.Prev != 3 || spec.Outcome == nil || spec.Outcome.Spec.ExpertQuant != MixedQuant {
		t.Fatalf("speculative step builds on %d, want step 4 (index 3); skipped: %s", spec.Prev, spec.Skipped)
	}
	checkNamedOnly(t, a)
	if sp := a.Rows[4].Outcome.Spec.Speculative; sp.Block != 3 || sp.Accept != 0.5 || sp.AcceptSeed != 3 || *sp.Drafter != (experiment.Drafter{Kind: "explicit", Bytes: 300e6, FLOPs: 6e8}) {
		t.Errorf("speculative group %+v", sp)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, a); err != nil {
		t.Fatal(err)
	}
	if want := "quant: q4_k_m from the trace's metadata; from step (4) on, its experts re-quantized to Q3_K"; !strings.Contains(b.String(), want) || strings.Contains(b.String(), "skipped") {
		t.Errorf("table does not say which quant each step ran with (%q):\n%s", want, b.String())
	}
}

// TestTraceFileCannotRequantize: when the trace's model cannot take the
// re-quantization (here its experts are Q3_K already), step 4 is skipped with
// the reason found while resolving it, and step 5 builds on step 3.
func TestTraceFileCannotRequantize(t *testing.T) {
	path := writeVariantTrace(t, "mixed-q3k-experts", 40)
	set := DefaultSettings()
	set.Base = map[string]string{"trace": path, "cache": "3GiB"}
	a := mustRun(t, set)
	mixed := a.Rows[3]
	if mixed.Outcome != nil || !strings.Contains(mixed.Skipped, "expert_quant Q3_K: model minicpm-v-4.7-35b-a3b (mixed-q3k-experts): every expert tensor is Q3_K already") {
		t.Errorf("mixed step: skipped %q", mixed.Skipped)
	}
	if spec := a.Rows[4]; spec.Prev != 2 || spec.Outcome == nil || spec.Outcome.Spec.ExpertQuant != "" {
		t.Fatalf("speculative step builds on %d, want step 3 (index 2); skipped: %s", spec.Prev, spec.Skipped)
	}
	checkNamedOnly(t, a)
	var b bytes.Buffer
	if err := WriteTable(&b, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(4) skipped: expert_quant Q3_K") || !strings.Contains(b.String(), "quant: mixed-q3k-experts in every step that ran, from the trace's metadata") {
		t.Errorf("table:\n%s", b.String())
	}
	// Leaving steps out skips the skipped step too: no row without it, and
	// the others' chains never re-quantize.
	set.LeaveOneOut = true
	a = mustRun(t, set)
	if n := len(a.Rows); n != 10 || a.Rows[8].Step.Without != "lookahead" || a.Rows[9].Step.Without != "storage" {
		t.Fatalf("%d rows, want 8 and w/o (2), w/o (3)", n)
	}
	for _, r := range a.Rows[8:] {
		if r.Outcome == nil || r.Outcome.Spec.ExpertQuant != "" {
			t.Errorf("%s: skipped %q or re-quantized", r.Step.Key, r.Skipped)
		}
	}
	set.LeaveOneOut = false
	// Build alone cannot know: it builds step 4.
	built, err := Build(set)
	if err != nil || built[3].Skipped != "" {
		t.Errorf("Build: step 4 skipped %q, err %v", built[3].Skipped, err)
	}
}

// TestQwenMixedPrecision: a built-in model without a mixed variant still
// has the mixed-precision step: Qwen3-30B-A3B's experts in Q3_K. (The cache
// is in bytes: a percentage is a share of each step's own expert bytes,
// which step 4 shrinks.)
func TestQwenMixedPrecision(t *testing.T) {
	a := mustRun(t, small(map[string]string{"model": "qwen3-30b-a3b", "cache": "2GiB"}))
	r := a.Rows[3]
	if r.Outcome == nil {
		t.Fatalf("mixed step skipped: %s", r.Skipped)
	}
	// Gate and up: 768 rows of 2048/256 Q3_K blocks of 110 B; down: 2048 rows of 768/256 blocks.
	if got, want := r.Outcome.Model.Layers[0].ExpertBytes, int64(2*768*8*110+2048*3*110); got != want {
		t.Errorf("expert bytes %d, want %d", got, want)
	}
	checkNamedOnly(t, a)
}

// TestBadInput: bad settings and inputs fail with the reason, before any run.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Settings)
	}{
		{"block 1", func(s *Settings) { s.SpecBlock = 1 }},
		{"accept", func(s *Settings) { s.SpecAccept = 1.5 }},
		{"own option", func(s *Settings) { s.Base["spec-block"] = "3" }},
		{"own drafter option", func(s *Settings) { s.Base["drafter"] = "free" }},
		{"unknown drafter", func(s *Settings) { s.Drafter = "eagle" }}, // as simulate words it
		{"explicit without cost", func(s *Settings) { s.Drafter = "explicit" }},
		{"cost of a kind", func(s *Settings) { s.DrafterBytes = 5 }},
		{"unknown device", func(s *Settings) { s.Base["device"] = "pixel" }},
		{"cache too small", func(s *Settings) { s.Base["cache"] = "10MiB" }},
		{"does not apply", func(s *Settings) { s.Base["trace"] = "x.parquet" }},
		{"unknown option", func(s *Settings) { s.Base["colour"] = "red" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := small(nil)
			tc.edit(&s)
			var in experiment.Inputs
			_, err := Run(&in, s)
			errgolden.Check(t, "refused", err)
		})
	}
}

// TestLeavesAndDiff: flattening keeps field order and array positions; the
// diff names changed, added and removed fields.
func TestLeavesAndDiff(t *testing.T) {
	a := experiment.DefaultSpec()
	b := experiment.DefaultSpec()
	b.Policy.LES = &experiment.LES{TopN: 4}
	b.Layout = "gguf-mmap"
	b.Trace.Synthetic = nil
	b.Trace.Path = "x.parquet"
	la, err := Leaves(a)
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := Leaves(b)
	if la[0] != (Leaf{"version", "1"}) || la[1] != (Leaf{"model.name", strconv.Quote(experiment.DefaultModel)}) {
		t.Errorf("leaves start %v", la[:2])
	}
	var got []string
	for _, d := range Diff(la, lb) {
		got = append(got, d.String())
	}
	want := `trace.path: absent → "x.parquet"|policy.les.top_n: absent → 4|layout: "per-expert" → "gguf-mmap"|` +
		`trace.synthetic.tokens: 2000 → absent|trace.synthetic.prompt_tokens: 0 → absent|trace.synthetic.sequences: 1 → absent|` +
		`trace.synthetic.skew: 1.3 → absent|trace.synthetic.reuse: 0.45 → absent|trace.synthetic.lookahead_recall: 0.807 → absent|` +
		`trace.synthetic.lookahead_depth: 1 → absent|trace.synthetic.depth_penalty: 0.0375 → absent|trace.synthetic.seed: 1 → absent`
	if strings.Join(got, "|") != want {
		t.Errorf("diff\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	d, err := devices.LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := d.Device()
	if err != nil {
		t.Fatal(err)
	}
	a.Device.Profile = dev
	la, _ = Leaves(a)
	arrays := 0
	for _, l := range la {
		if strings.Contains(l.Path, "[") {
			arrays++
		}
	}
	if arrays == 0 {
		t.Error("no array element among the device profile's leaves")
	}
	if Under("policy.les", "policy.le") || !Under("policy.les.top_n", "policy") || !Under("x[1]", "x") {
		t.Error("Under")
	}
}

// TestPlot: the bar chart is written as PNG and SVG; a folder that does not
// exist fails and leaves nothing.
func TestPlot(t *testing.T) {
	a := mustRun(t, small(nil))
	dir := t.TempDir()
	files, err := WritePlot(a, filepath.Join(dir, "ablation"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 100 {
		t.Fatalf("png: %v", err)
	}
	svg, err := os.ReadFile(files[1])
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("(1) stock llama.cpp")) {
		t.Errorf("svg: %v", err)
	}
	_, err = WritePlot(a, filepath.Join(dir, "missing", "ablation"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plot into a missing folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the failed plot created its folder")
	}
}

// TestLeaveOneOut: with LeaveOneOut, one row per middle step follows the
// reference; each is the last step's spec with exactly that step's changes
// undone (its resolved diff from the last step is the step's own diff
// reversed, nothing else), its speedup taken over the last step.
func TestLeaveOneOut(t *testing.T) {
	s := small(nil)
	s.LeaveOneOut = true
	a := mustRun(t, s)
	want := []string{"stock", "lookahead", "storage", "mixed", "speculative", "speculative-draft-reuse-0", "speculative-draft-reuse-1", "oracle", "without-lookahead", "without-storage", "without-mixed"}
	if len(a.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(a.Rows), len(want))
	}
	last := a.Rows[4]
	for i, r := range a.Rows {
		if r.Step.Key != want[i] || r.Outcome == nil {
			t.Fatalf("row %d: %s (skipped %q), want %s run", i, r.Step.Key, r.Skipped, want[i])
		}
		if i < 8 {
			continue
		}
		own := a.Rows[i-7].Changes // the left-out step's diff from the step before it
		if r.Step.Without != a.Rows[i-7].Step.Key || r.Prev != 4 || !r.Step.Reference {
			t.Errorf("row %d: without %q, builds on %d, reference %v", i, r.Step.Without, r.Prev, r.Step.Reference)
		}
		if len(r.Changes) != len(own) {
			t.Errorf("%s: changes %v from the last step, want the reverse of %v", r.Step.Key, r.Changes, own)
		}
		for _, d := range r.Changes {
			ok := false
			for _, o := range own {
				ok = ok || o.Field == d.Field && o.From == d.To && o.To == d.From
			}
			if !ok {
				t.Errorf("%s: %s is not the reverse of a change of step %s (%v)", r.Step.Key, d, r.Step.Without, own)
			}
		}
		if want := r.Outcome.Result.TokensPerSec / last.Outcome.Result.TokensPerSec; r.VsPrevious != want {
			t.Errorf("%s: vs previous %v, want %v (over the last step)", r.Step.Key, r.VsPrevious, want)
		}
	}
	var txt, js bytes.Buffer
	if err := WriteTable(&txt, a); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"\nw/o (2) lookahead prefetch ", "\nw/o (4) mixed precision (Q3_K experts) ", "w/o (k): step (5)'s settings without step k's changes"} {
		if !strings.Contains(txt.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, txt.String())
		}
	}
	if err := WriteJSON(&js, a); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"leave_one_out": true`, `"without": "storage"`} {
		if !strings.Contains(js.String(), w) {
			t.Errorf("JSON lacks %s", w)
		}
	}
}
