package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

// writePairedTrace writes a synthetic trace with a prefill whose decode
// tokens were verified two per pass (as a speculative engine records them).
func writePairedTrace(t *testing.T, path string) {
	t.Helper()
	m, err := devices.LookupModel(defaultModel, "")
	if err != nil {
		t.Fatal(err)
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.Seed = 80, 8, 11
	meta, steps, err := traces.Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	k := int32(0)
	for i := range steps {
		if steps[i].Phase == traces.Decode {
			steps[i].Pass = 1 + k/2
			k++
		}
	}
	if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
}

// TestSimulateSpecReproduces: a result's JSON, given back with --spec,
// reproduces the result byte for byte (JSON and text), over every policy and
// the options that matter.
func TestSimulateSpecReproduces(t *testing.T) {
	dir := t.TempDir()
	profile, err := filepath.Abs(filepath.Join("..", "..", "devices", "profiles", "ufs4-phone-12gb.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writePairedTrace(t, filepath.Join(dir, "paired.parquet"))
	if out := runCLI(t, dir, "trace", "synth", "--tokens", "80", "--depth", "0", "--out", "bare.parquet"); strings.Contains(out, "lessim: ") {
		t.Fatal(out)
	}
	common := []string{"--tokens", "80"}
	for _, args := range [][]string{
		common,
		append([]string{"--policy", "les", "--threshold", "0.9", "--max-candidates", "12", "--depth", "2", "--max-inflight", "64MiB"}, common...),
		append([]string{"--policy", "les", "--top-n", "6", "--cache", "2GiB"}, common...),
		append([]string{"--policy", "les", "--no-prefetch", "--layout", "gguf-mmap", "--cached-first=false"}, common...),
		append([]string{"--policy", "lru", "--spec-block", "4", "--spec-accept", "0.6", "--accept-seed", "3", "--drafter", "explicit", "--drafter-bytes", "300MB", "--drafter-flops", "6e8", "--trace-seed", "2"}, common...),
		append([]string{"--policy", "lfu", "--cache", "15%", "--context", "8192", "--device", "ipad-pro-m4"}, common...),
		append([]string{"--policy", "ondemand", "--variant", "mixed-q3k-experts", "--seed", "9"}, common...),
		append([]string{"--policy", "oracle", "--cache", "3GiB", "--spec-block", "2", "--spec-accept", "0", "--drafter", "free"}, common...),
		append([]string{"--policy", "pinned-hot", "--pin-fraction", "0.3", "--model", "qwen3-30b-a3b"}, common...),
		{"--trace", "paired.parquet", "--spec-from-trace", "--prefill", "--policy", "les"},
		{"--trace", "paired.parquet", "--spec-block", "3", "--spec-accept-from-trace", "--drafter", "mtp", "--policy", "les"},
		{"--trace", "paired.parquet", "--policy", "oracle", "--prefill", "--context", "4096"},
		{"--trace", "bare.parquet", "--predict-recall", "0.75", "--predict-fp", "2", "--predict-seed", "4", "--depth", "2", "--cache", "2GiB"},
		{"--trace", "bare.parquet", "--policy", "pinned-hot", "--device-file", profile},
	} {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			first := runCLI(t, dir, append([]string{"simulate", "--format", "json"}, args...)...)
			if strings.Contains(first, "lessim: ") || !strings.HasPrefix(first, "{") {
				t.Fatal(first)
			}
			run := filepath.Join(dir, "run.json")
			if err := os.WriteFile(run, []byte(first), 0o644); err != nil {
				t.Fatal(err)
			}
			if again := runCLI(t, dir, "simulate", "--spec", run, "--format", "json"); again != first {
				t.Errorf("--spec run.json printed something else:\n%s\n--- first\n%s", again, first)
			}
			text := runCLI(t, dir, append([]string{"simulate"}, args...)...)
			if again := runCLI(t, dir, "simulate", "--spec", run); again != text {
				t.Errorf("--spec run.json (text) differs:\n%s\n--- flags\n%s", again, text)
			}
		})
	}
}

// TestSimulateBareSpec: a hand-written spec runs like the flags it stands for.
func TestSimulateBareSpec(t *testing.T) {
	spec, err := filepath.Abs(filepath.Join("..", "..", "experiment", "testdata", "lru-3gib.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := runCLI(t, "", "simulate", "--spec", spec)
	b := runCLI(t, "", "simulate", "--variant", "mixed-q3k-experts", "--tokens", "300", "--seed", "7", "--policy", "lru", "--cache", "3GiB")
	if a != b || strings.Contains(a, "lessim: ") {
		t.Errorf("bare spec:\n%s\nflags:\n%s", a, b)
	}
}

func TestSimulateSpecRefusesOtherOptions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runCLI(t, dir, "simulate", "--spec", "s.json", "--cache", "3GiB", "--policy", "lru", "--format", "json")
	want := "lessim: --spec holds the whole experiment, so --cache, --policy cannot be given with it (edit the spec instead); only --format, --plot, --quiet may be\n"
	if got != want {
		t.Errorf("got %q", got)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"policy":{"name":"lru","les":{"top_n":3}}}`, "policy.les: applies only to policy les (policy is lru)"},
		{`{"policy":{"name":"lru2","les":{"top_n":3}}}`, `unknown policy "lru2" (valid: belady, les, lfu, lru, ondemand, oracle, pinned-hot)`},
		{`{"inputs":{}}`, "before specs existed"},
		{`not json`, "s.json: spec:"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := runCLI(t, dir, "simulate", "--spec", "s.json"); !strings.HasPrefix(got, "lessim: ") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.body, got, tc.want)
		}
	}
}

// TestSimulateRefusesOptionsThatDoNotApply: every option × policy (and trace)
// combination that does not apply is an error naming the reason, before any
// work; nothing is printed but the error.
func TestSimulateRefusesOptionsThatDoNotApply(t *testing.T) {
	policies := []string{"les", "lru", "lfu", "ondemand", "oracle", "pinned-hot"}
	lesOnly := [][]string{{"--no-prefetch"}, {"--threshold", "0.5"}, {"--top-n", "4"}, {"--max-candidates", "4"}, {"--depth", "1"}, {"--max-inflight", "0"}}
	type tc struct {
		args []string
		want string
	}
	var cases []tc
	for _, pol := range policies {
		if pol != "les" {
			for _, o := range lesOnly {
				cases = append(cases, tc{append([]string{"--policy", pol}, o...), o[0] + " does not apply"})
			}
		}
		if pol != "pinned-hot" {
			cases = append(cases, tc{[]string{"--policy", pol, "--pin-fraction", "0.5"}, "--pin-fraction does not apply: it is a pinned-hot option"})
		}
	}
	cases = append(cases,
		tc{[]string{"--policy", "les", "--no-prefetch", "--depth", "2"}, "--depth does not apply: --no-prefetch is set"},
		tc{[]string{"--policy", "les", "--no-prefetch", "--top-n", "8"}, "--top-n does not apply: --no-prefetch is set"},
		tc{[]string{"--threshold", "0.9", "--top-n", "8"}, "--top-n does not apply: --threshold picks candidates"},
		tc{[]string{"--max-candidates", "12"}, "--max-candidates does not apply"},
		tc{[]string{"--trace", "x.parquet", "--model", defaultModel}, "--model does not apply: with --trace x.parquet, the trace's metadata holds the model"},
		tc{[]string{"--trace", "x.parquet", "--variant", "q4_k_m"}, "--variant does not apply"},
		tc{[]string{"--trace", "x.parquet", "--tokens", "2000"}, "--tokens does not apply"},
		tc{[]string{"--trace", "x.parquet", "--seed", "1"}, "--seed does not apply: nothing in this run is random"},
		tc{[]string{"--predict-recall", "0.8"}, "--predict-recall does not apply: the synthetic trace carries its own lookahead scores"},
		tc{[]string{"--predict-fp", "2"}, "--predict-fp does not apply"},
		tc{[]string{"--device", "ipad-pro-m4", "--device-file", "x.yaml"}, "--device and --device-file exclude each other"},
		tc{[]string{"--spec-accept", "0.5"}, "--spec-accept does not apply: it is a setting of speculative decoding, which --spec-block N (N >= 2) turns on"},
		tc{[]string{"--accept-seed", "2"}, "--accept-seed does not apply"},
		tc{[]string{"--spec-from-trace"}, "--spec-from-trace does not apply: a synthetic trace has one decode token per pass"},
		tc{[]string{"--trace", "x.parquet", "--spec-from-trace", "--spec-block", "4"}, "--spec-block does not apply: with --spec-from-trace the passes come from the trace"},
		tc{[]string{"--trace", "x.parquet", "--spec-from-trace", "--spec-accept", "0.7"}, "every recorded token is accepted"},
		tc{[]string{"--prefill"}, "--prefill does not apply: the synthetic trace has no prefill"},
		tc{[]string{"--spec-block", "4"}, "speculative.drafter: missing: state what drafts and what it costs (--drafter free|mtp|ngram|explicit|controlled"},
		tc{[]string{"--drafter", "mtp"}, "--drafter does not apply: it is a setting of speculative decoding"},
	)
	// An unknown name is refused with the valid ones, not taken for a
	// policy or layout the option does not apply to.
	cases = append(cases,
		tc{[]string{"--policy", "lru2", "--top-n", "3"}, "--policy lru2: unknown policy (valid: belady, les, lfu, lru, ondemand, oracle, pinned-hot)"},
		tc{[]string{"--layout", "bogus", "--page-cache", "free-ram"}, "--layout bogus: unknown layout (valid: gguf-mmap, per-expert)"},
		tc{[]string{"--drafter", "nope", "--drafter-bytes", "1MB"}, "--drafter nope: unknown drafter (valid: free, mtp, ngram, explicit, controlled, model)"},
	)
	for _, c := range cases {
		got := runCLI(t, "", append([]string{"simulate"}, c.args...)...)
		if !strings.HasPrefix(got, "lessim: ") || !strings.Contains(got, c.want) {
			t.Errorf("simulate %s:\ngot  %q\nwant %q", strings.Join(c.args, " "), got, c.want)
		}
	}
}

// TestSimulateRefusesNonFiniteNumbers: every float option refuses NaN and
// infinities when the flag is parsed, before any work.
func TestSimulateRefusesNonFiniteNumbers(t *testing.T) {
	n := 0
	for _, o := range experiment.Options() {
		if o.Kind != experiment.KindFloat {
			continue
		}
		n++
		for _, v := range []string{"NaN", "Inf", "-Inf", "+Inf", "1e999"} {
			got := runCLI(t, "", "simulate", "--"+o.Name, v)
			if !strings.HasPrefix(got, "lessim: invalid argument") || !strings.Contains(got, "finite number") {
				t.Errorf("--%s %s: %q", o.Name, v, got)
			}
		}
	}
	if n < 5 {
		t.Errorf("only %d float options", n)
	}
}

// TestSimulatePlotFolderCheckedFirst: an unwritable plot destination is
// refused before the run.
func TestSimulatePlotFolderCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	got := runCLI(t, dir, "simulate", "--tokens", "50", "--plot", "missing/run")
	if !strings.HasPrefix(got, "lessim: --plot missing/run: ") {
		t.Errorf("got %q", got)
	}
}

// TestPlotPrefixNamesAFile: a --plot prefix that names a folder ("plots/",
// ".") is refused before the run, by simulate and ablate alike: it wrote the
// hidden files plots/.png and plots/.svg.
func TestPlotPrefixNamesAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "plots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"simulate", "ablate"} {
		for _, prefix := range []string{"plots/", ".", "plots/.png"} {
			got := runCLI(t, dir, cmd, "--tokens", "20", "--cache", "3GiB", "--plot", prefix)
			if !strings.HasPrefix(got, "lessim: --plot "+prefix+": ") || !strings.Contains(got, "names a folder") {
				t.Errorf("%s --plot %s: got %q", cmd, prefix, got)
			}
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "plots")); len(ents) != 0 {
		t.Errorf("plots/ holds %v", ents)
	}
}

// TestSimulatePlotFailureKeepsResult: when the plot fails after the run, the
// result is printed anyway and the failure is reported after it.
func TestSimulatePlotFailureKeepsResult(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "run.png"), 0o755); err != nil { // a folder where the PNG goes
		t.Fatal(err)
	}
	got := runCLI(t, dir, "simulate", "--tokens", "50", "--cache", "3GiB", "--plot", "run", "--format", "json")
	want := runCLI(t, dir, "simulate", "--tokens", "50", "--cache", "3GiB", "--format", "json")
	if !strings.HasPrefix(got, want) {
		t.Fatalf("the result is not printed in full first:\n%s", got)
	}
	if rest := strings.TrimPrefix(got, want); !strings.HasPrefix(rest, "lessim: the result above is complete, but the plot failed: ") {
		t.Errorf("after the result: %q", rest)
	}
}

// TestSimulateContextBound: --context beyond its bound is refused, and a
// device budget the resident weights and KV cache overdraw is shown as
// none, never as a negative size.
func TestSimulateContextBound(t *testing.T) {
	dir := t.TempDir()
	args := []string{"simulate", "--tokens", "20", "--cache", "3GiB"}
	out, _, err := runCLIErr(t, dir, append(args, "--context", "99999999999999")...)
	if errgolden.Check(t, "context-too-long", err); out != "" {
		t.Errorf("out %q", out)
	}
	out, _, err = runCLIErr(t, dir, append(args, "--context", "1000000")...)
	if err != nil || !strings.Contains(out, "cache   3.00 GiB (device budget none, 14.61 GiB short)\n") ||
		!strings.Contains(out, "expert budget none, 14.61 GiB short (RAM 12.00 GiB") || strings.Contains(out, "budget -") {
		t.Errorf("out %q, err %v", out, err)
	}
}

// TestSimulateRefusesEmpty: a flag given an empty value is refused, not
// taken as absent (--spec "" ran the flags' experiment, --plot "" drew
// nothing).
func TestSimulateRefusesEmpty(t *testing.T) {
	for _, args := range [][]string{
		{"--spec", ""}, {"--plot", ""}, {"--variant", ""}, {"--trace", " "},
	} {
		out, _, err := runCLIErr(t, t.TempDir(), append([]string{"simulate", "--tokens", "5", "--cache", "3GiB"}, args...)...)
		if errgolden.Check(t, strings.Trim(args[0], "-"), err); out != "" {
			t.Errorf("%q: out %q", args, out)
		}
	}
}
