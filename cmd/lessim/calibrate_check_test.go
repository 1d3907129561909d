package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/runtime/live"
)

// TestCalibrateChecksFirst: calibrate refuses, before it measures anything
// (and in a build without llama.cpp, before saying so), counts below their
// minimum, with the message calibrate --target gives (0 is not "the
// default"; --tokens 1 failed only after the whole run), and an --out it
// could not write (a folder failed at the final rename, after a minute of
// measuring).
func TestCalibrateChecksFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--samples", "0", "--reads", "0", "--tokens", "0"}, "lessim: --samples 0: want at least 1 (samples per measured value)\n" +
			"--reads 0: want at least 1 (reads per lane per flash sample)\n" +
			"--tokens 0: want at least 2 (decoded tokens per model: the live engine's load-cost fit needs at least 3 over its two runs)\n"},
		{[]string{"--samples", "1", "--reads", "1", "--tokens", "1"}, "lessim: --tokens 1: want at least 2 (decoded tokens per model: the live engine's load-cost fit needs at least 3 over its two runs)\n"},
		{[]string{"--out", "adir"}, "lessim: --out: output adir exists and is a folder, not a regular file: refusing to replace it\n"},
		{[]string{"--out", "nonexist/c.yaml"}, "lessim: --out: cannot write nonexist/c.yaml: folder nonexist does not exist\n"},
		{[]string{"--out", "m.gguf"}, "lessim: --out: output m.gguf is the input m.gguf: refusing to overwrite an input (choose another output path)\n"},
	} {
		args := append([]string{"calibrate", "--model", "m.gguf", "--out", "c.yaml"}, tc.args...)
		if got := runCLI(t, dir, args...); got != tc.want {
			t.Errorf("%v:\n%s\nwant\n%s", tc.args, got, tc.want)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left behind: %v", es)
	}
}

// TestCalibrateFromRunFormat: a lessim live --series file read in the
// default format (bmoe-metrics-csv) is named as Parquet with the flag to
// pass, not printed as bytes; read as a series without --cache, the error
// says to pass --cache, not that a summary lacks BigMoeOnEdge's field.
func TestCalibrateFromRunFormat(t *testing.T) {
	dir := t.TempDir()
	runCLI(t, dir, "trace", "synth", "--tokens", "8", "--quiet", "--out", "t.parquet")
	var series []live.TokenSample
	for i := range 8 {
		series = append(series, live.TokenSample{Token: i, WallNS: 1e6, ComputeNS: 1e6})
	}
	if err := live.WriteSeries(filepath.Join(dir, "ser.parquet"), series); err != nil {
		t.Fatal(err)
	}
	args := []string{"calibrate", "--from-run", "ser.parquet", "--trace", "t.parquet", "--device", defaultDevice, "--out", "c.yaml"}
	want := "lessim: --from-run ser.parquet: a Parquet file, not a BigMoeOnEdge metrics CSV (a lessim live --series file is the lessim-live-series format): pass --run-format lessim-live-series\n"
	if got := runCLI(t, dir, args...); got != want {
		t.Errorf("default format:\n%s\nwant\n%s", got, want)
	}
	want = "lessim: --cache: a lessim live series does not record the run's cache: pass --cache, as the live run was given it (a size such as 512MiB, or a percentage of the expert bytes)\n"
	if got := runCLI(t, dir, append(args, "--run-format", "lessim-live-series")...); got != want {
		t.Errorf("series without --cache:\n%s\nwant\n%s", got, want)
	}
}
