package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// TestAblateGolden pins ablate's text, --explain and JSON output and its
// refusals; errors are part of the output.
func TestAblateGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"ablate", []string{"ablate", "--device", "iphone-18-pro-max", "--cache", "3GiB", "--tokens", "200"}},
		{"ablate-explain", []string{"ablate", "--cache", "3GiB", "--tokens", "200", "--explain"}},
		{"ablate-json", []string{"ablate", "--cache", "3GiB", "--tokens", "60", "--seed", "2", "--spec-block", "3", "--spec-accept", "0.6", "--reference=false", "--format", "json"}},
		{"ablate-qwen", []string{"ablate", "--model", "qwen3-30b-a3b", "--cache", "3GiB", "--tokens", "100"}},
		{"ablate-err-unknown-device", []string{"ablate", "--device", "pixel", "--tokens", "10"}},
		{"ablate-err-cache-too-small", []string{"ablate", "--cache", "10MiB", "--tokens", "10"}},
		{"ablate-err-not-apply", []string{"ablate", "--trace", "t.parquet", "--tokens", "10", "--model", "qwen3-30b-a3b"}},
		{"ablate-err-explain-json", []string{"ablate", "--explain", "--format", "json"}},
		{"ablate-err-spec", []string{"ablate", "--spec-block", "1", "--spec-accept", "1.5"}},
		{"ablate-err-spec-nan", []string{"ablate", "--spec-accept", "NaN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, runCLI(t, "", tc.args...))
		})
	}
}

// TestAblateTraceGolden pins ablate on trace files: step 4 re-quantizes a
// synthetic trace's Q4_K_M model to Q3_K experts, and is skipped, with the
// reason, on an imported route trace whose metadata has no expert shape.
func TestAblateTraceGolden(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "..", "traces", "testdata", "bmoe-small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"trace", "synth", "--tokens", "120", "--seed", "4", "--out", "t.parquet"},
		{"trace", "import", src, "--out", "toy.parquet", "--quiet"},
	} {
		if out := runCLI(t, dir, args...); strings.Contains(out, "lessim: ") {
			t.Fatal(out)
		}
	}
	golden(t, "ablate-trace", runCLI(t, dir, "ablate", "--trace", "t.parquet", "--device", "iphone-18-pro-max", "--cache", "3GiB"))
	golden(t, "ablate-trace-imported", runCLI(t, dir, "ablate", "--trace", "toy.parquet", "--cache", "1KiB", "--reference=false"))
}

// ablateJSON is the part of ablate's JSON a reproduction needs.
type ablateJSON struct {
	Steps []struct {
		Key      string          `json:"key"`
		Skipped  string          `json:"skipped"`
		Spec     json.RawMessage `json:"spec"`
		SpecHash json.RawMessage `json:"spec_hash"`
		Result   json.RawMessage `json:"result"`
	} `json:"steps"`
}

// TestAblateJSONReproduces: each step of ablate's JSON, given to simulate
// --spec (as spec, spec_hash and result, and as the bare spec), reproduces
// the step's result byte for byte; on a trace file too, where step 4
// re-quantizes the trace's model.
func TestAblateJSONReproduces(t *testing.T) {
	dir := t.TempDir()
	if out := runCLI(t, dir, "trace", "synth", "--tokens", "80", "--seed", "4", "--out", "t.parquet"); strings.Contains(out, "lessim: ") {
		t.Fatal(out)
	}
	for _, args := range [][]string{
		{"ablate", "--device", "iphone-18-pro-max", "--cache", "3GiB", "--tokens", "80", "--seed", "3", "--format", "json"},
		{"ablate", "--trace", "t.parquet", "--cache", "30%", "--spec-block", "2", "--format", "json"},
	} {
		out := runCLI(t, dir, args...)
		var a ablateJSON
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		ran := 0
		for i, st := range a.Steps {
			if st.Skipped != "" {
				continue
			}
			ran++
			var whole bytes.Buffer
			whole.WriteString(`{"spec":` + string(st.Spec) + `,"spec_hash":` + string(st.SpecHash) + `,"result":` + string(st.Result) + `}`)
			var want bytes.Buffer
			if err := json.Compact(&want, whole.Bytes()); err != nil {
				t.Fatal(err)
			}
			for j, input := range [][]byte{whole.Bytes(), st.Spec} {
				file := filepath.Join(dir, "step.json")
				if err := os.WriteFile(file, input, 0o644); err != nil {
					t.Fatal(err)
				}
				got := runCLI(t, dir, "simulate", "--spec", "step.json", "--format", "json")
				var gotc bytes.Buffer
				if err := json.Compact(&gotc, []byte(got)); err != nil {
					t.Fatalf("step %d: %v\n%s", i, err, got)
				}
				if gotc.String() != want.String() {
					t.Errorf("%v step %d (%s), input %d: simulate --spec gives\n%s\nwant\n%s", args, i, st.Key, j, gotc.String(), want.String())
				}
			}
		}
		if ran != 8 {
			t.Errorf("%v: %d steps ran, want all 8 (5 steps, 2 draft reuse rows, the reference)", args, ran)
		}
	}
}

// runCLIErr is runCLI that also returns stderr.
func runCLIErr(t *testing.T, dir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	t.Chdir(dir)
	var out, errb bytes.Buffer
	err = run(args, &out, &errb)
	return out.String(), errb.String(), err
}

// TestAblatePlot: --plot writes PNG and SVG after the table; a prefix in a
// folder that does not exist is refused before the run (nothing printed); a
// plot that fails while writing keeps the table and says so.
func TestAblatePlot(t *testing.T) {
	dir := t.TempDir()
	args := []string{"ablate", "--cache", "3GiB", "--tokens", "60"}
	out, errs, err := runCLIErr(t, dir, append(args, "--plot", "bars.svg")...)
	if err != nil || !strings.Contains(out, "(5) + speculative decoding") || !strings.Contains(errs, "wrote bars.png, bars.svg") {
		t.Fatalf("out %q, stderr %q, err %v", out, errs, err)
	}
	for _, f := range []string{"bars.png", "bars.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: missing or empty (%v)", f, err)
		}
	}
	out, _, err = runCLIErr(t, dir, append(args, "--plot", "nowhere/bars")...)
	if errgolden.Check(t, "missing-folder", err); out != "" {
		t.Errorf("missing folder: out %q", out)
	}
	if err := os.Mkdir(filepath.Join(dir, "taken.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLIErr(t, dir, append(args, "--plot", "taken")...)
	if errgolden.Check(t, "failing-plot", err); !strings.Contains(out, "(5) + speculative decoding") {
		t.Errorf("failing plot: out %q", out)
	}
}

// TestAblateOut: --out writes the steps' results rows beside the table, and
// lessim report on that folder draws the ablation bars; a folder that cannot
// be written is refused before the run.
func TestAblateOut(t *testing.T) {
	dir := t.TempDir()
	args := []string{"ablate", "--cache", "3GiB", "--tokens", "60"}
	out, errs, err := runCLIErr(t, dir, append(args, "--out", "res/abl")...)
	want := filepath.Join("res", "abl", "ablation.parquet")
	if err != nil || !strings.Contains(out, "(5) + speculative decoding") || !strings.Contains(errs, "wrote "+want) {
		t.Fatalf("out %q, stderr %q, err %v", out, errs, err)
	}
	out, _, err = runCLIErr(t, dir, "report", "res/abl", "--out", "rep")
	if err != nil || !regexp.MustCompile(`read +8 rows from 1 file`).MatchString(out) || !regexp.MustCompile(`drew .*\bablation\b`).MatchString(out) {
		t.Fatalf("report: out %q, err %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLIErr(t, dir, append(args, "--out", "file/res")...)
	if errgolden.Check(t, "out-under-a-file", err); out != "" {
		t.Errorf("out under a file: out %q", out)
	}
}

// TestAblateOutputIsInput: an output that is an input (--out's results
// rows, the plot's files, against --trace and --device-file) is refused
// before any work, and the input is left as it was.
func TestAblateOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLIErr(t, dir, "trace", "synth", "--tokens", "20", "--out", "ab/ablation.parquet"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.png"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "ab", "ablation.parquet"))
	for _, tc := range []struct {
		args []string
		name string
	}{
		{[]string{"--trace", "ab/ablation.parquet", "--out", "ab"}, "out-is-trace"},
		{[]string{"--trace", "ab/ablation.parquet", "--out", "./ab/"}, "out-is-trace-other-spelling"},
		{[]string{"--trace", "ab/ablation.parquet", "--device-file", "p.png", "--plot", "p"}, "plot-is-device-file"},
	} {
		out, _, err := runCLIErr(t, dir, append([]string{"ablate", "--cache", "3GiB"}, tc.args...)...)
		if errgolden.Check(t, tc.name, err); out != "" {
			t.Errorf("%v: out %q", tc.args, out)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "ab", "ablation.parquet")); !bytes.Equal(before, after) {
		t.Error("the input trace changed")
	}
}

// TestAblateRefusesUpFront: an invalid speculative setting fails ablate
// before any run (not a skipped step), and a drafter cost flag given with a
// drafter other than explicit is refused whatever its value.
func TestAblateRefusesUpFront(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string
	}{
		{[]string{"--drafter", "explicit", "--drafter-flops", "9223372036854775807"}, "flops-too-many"},
		{[]string{"--drafter", "explicit", "--drafter-bytes", "8185TiB"}, "bytes-too-many"},
		{[]string{"--spec-block", "65"}, "block-too-long"},
		{[]string{"--drafter", "mtp", "--drafter-bytes", "0"}, "bytes-not-explicit"},
		{[]string{"--drafter", "mtp", "--drafter-flops", "0"}, "flops-not-explicit"},
		{[]string{"--drafter", "nope", "--drafter-bytes", "1MB"}, "unknown-drafter"},
	} {
		out, _, err := runCLIErr(t, t.TempDir(), append([]string{"ablate", "--tokens", "20", "--cache", "3GiB"}, tc.args...)...)
		if errgolden.Check(t, tc.name, err); out != "" {
			t.Errorf("%v: out %q", tc.args, out)
		}
	}
}

// TestAblateDrafterFlagsAsSimulate: ablate reads --drafter-flops and
// --drafter-bytes as simulate does (a float such as 1.2e9, a size, only
// finite numbers), so a command line that works for one works for the other.
func TestAblateDrafterFlagsAsSimulate(t *testing.T) {
	base := []string{"ablate", "--tokens", "20", "--cache", "3GiB", "--reference=false", "--format", "json", "--drafter", "explicit", "--drafter-bytes", "400MB"}
	want, _, err := runCLIErr(t, t.TempDir(), append(base, "--drafter-flops", "1200000000")...)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := runCLIErr(t, t.TempDir(), append(base, "--drafter-flops", "1.2e9")...)
	if err != nil || got != want {
		t.Errorf("--drafter-flops 1.2e9: err %v; output equal to 1200000000's: %v", err, got == want)
	}
	for _, v := range []string{"NaN", "Inf"} {
		_, _, err := runCLIErr(t, t.TempDir(), append(base, "--drafter-flops", v)...)
		errgolden.Check(t, "flops-"+v, err)
	}
}
