package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/sweep"
)

// smallGrid is the docs' example grid (docs/sweeps.md), from this package's folder.
var smallGrid = filepath.Join("..", "..", "docs", "examples", "small-grid.yaml")

func TestSweepGolden(t *testing.T) {
	grid, err := filepath.Abs(smallGrid)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := filepath.Abs(filepath.Join("testdata", "sweep-bad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"sweep-list", []string{"sweep", "--config", grid, "--list"}, ""},
		{"err-sweep-invalid", []string{"sweep", "--config", bad, "--out", "r"}, ""},
		{"err-sweep-no-config", []string{"sweep", "--out", "r"}, ""},
		{"err-sweep-shard", []string{"sweep", "--config", grid, "--out", "r", "--shard", "3/3"}, ""},
		{"err-sweep-job-index", []string{"sweep", "--config", grid, "--out", "r"}, "2"},
		{"err-report-empty", []string{"report", "."}, ""},
		{"err-sweep-workers", []string{"sweep", "--config", grid, "--out", "r", "--workers", "-1", "--part-rows", "0"}, ""},
		{"err-sweep-shards", []string{"sweep", "--config", grid, "--out", "r", "--shards", "0"}, ""},
		{"err-sweep-shards-job", []string{"sweep", "--config", grid, "--out", "r", "--shards", "-5"}, "2"},
		{"err-sweep-shard-empty", []string{"sweep", "--config", grid, "--out", "r", "--shard", ""}, ""},
		{"err-sweep-list-flags", []string{"sweep", "--config", grid, "--list", "--out", "r", "--workers", "2", "--part-rows", "3", "--keep-series"}, ""},
		{"sweep-list-shard", []string{"sweep", "--config", grid, "--list", "--shard", "1/3"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(sweep.JobIndexEnv, tc.env)
			dir := t.TempDir()
			golden(t, tc.name, runCLI(t, dir, tc.args...))
			if _, err := os.Stat(filepath.Join(dir, "r")); !os.IsNotExist(err) {
				t.Errorf("wrote the --out folder (stat: %v)", err)
			}
		})
	}
}

// TestSweepThenReport runs the example grid, reruns it (nothing to do), and
// reports it; a second shard into the same folder adds nothing new.
func TestSweepThenReport(t *testing.T) {
	grid, err := filepath.Abs(smallGrid)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv(sweep.JobIndexEnv, "")
	out := runCLI(t, dir, "sweep", "--config", grid, "--out", "results", "--quiet")
	out += runCLI(t, dir, "sweep", "--config", grid, "--out", "results", "--quiet")
	out += runCLI(t, dir, "report", "results", "--out", "report")
	golden(t, "sweep-report", out)
	for _, f := range []string{"results/manifest.json", "results/sweep.yaml", "report/report.html", "report/heatmap.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// --table prints the page's rows table and, without --out, writes nothing.
	if err := os.RemoveAll(filepath.Join(dir, "report")); err != nil {
		t.Fatal(err)
	}
	golden(t, "sweep-report-table", runCLI(t, dir, "report", "results", "--table"))
	if _, err := os.Stat(filepath.Join(dir, "report")); !os.IsNotExist(err) {
		t.Errorf("report --table without --out wrote the report folder (stat: %v)", err)
	}
	// The Indexed Job's shards together run every point exactly once.
	t.Setenv(sweep.JobIndexEnv, "1")
	got := runCLI(t, dir, "sweep", "--config", grid, "--out", "sharded", "--shards", "2", "--quiet")
	if !strings.Contains(got, "shard    1/2: 4 points, 0 finished before, 4 run now") {
		t.Errorf("indexed job shard:\n%s", got)
	}
}

// TestReportIgnoresNonResults: a trace file inside a results folder is not
// read as rows (it once added its 2,000 trace rows to the count); report
// names it on stderr.
func TestReportIgnoresNonResults(t *testing.T) {
	grid, err := filepath.Abs(smallGrid)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv(sweep.JobIndexEnv, "")
	runCLI(t, dir, "sweep", "--config", grid, "--out", "rr", "--quiet")
	runCLI(t, dir, "trace", "synth", "--tokens", "50", "--out", "rr/t.parquet", "--quiet")
	out, errs, err := runCLIErr(t, dir, "report", "rr", "--out", "rep")
	if err != nil || !strings.Contains(out, "read     9 rows from 1 file in rr") {
		t.Errorf("report: %v\n%s", err, out)
	}
	if want := "ignored rr/t.parquet: a lessim trace, not results\n"; errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

// TestSweepRerunReportsFailures: a rerun over a folder holding failed rows
// exits with an error naming them, as the first run did.
func TestSweepRerunReportsFailures(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(sweep.JobIndexEnv, "")
	os.WriteFile(filepath.Join(dir, "sf.yaml"), []byte("base:\n  trace: {synthetic: {tokens: 50}}\naxes:\n  cache.size: [1MiB, 3GiB]\n"), 0o644)
	for i := range 2 {
		out, _, err := runCLIErr(t, dir, "sweep", "--config", "sf.yaml", "--out", "sfo", "--quiet")
		if errgolden.Check(t, fmt.Sprint("run-", i+1), err); !strings.Contains(out, ", 1 failed") {
			t.Errorf("run %d:\n%s", i+1, out)
		}
	}
	// Deleting the named part runs its points again (the decision: failed
	// rows are not retried by themselves; see docs/sweeps.md).
	os.Remove(filepath.Join(dir, "sfo", "part-0-of-1-00001.parquet"))
	out, _, err := runCLIErr(t, dir, "sweep", "--config", "sf.yaml", "--out", "sfo", "--quiet")
	if err == nil || !strings.Contains(out, "0 finished before, 2 run now, 1 failed") {
		t.Errorf("after deleting the part: %v\n%s", err, out)
	}
}

// TestSweepSingular: a grid of one axis and one point says so ("1 axis,
// 1 point"), not "1 axes, 1 points", when listed and when run.
func TestSweepSingular(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(sweep.JobIndexEnv, "")
	os.WriteFile(filepath.Join(dir, "one.yaml"), []byte("base:\n  trace: {synthetic: {tokens: 20}}\naxes:\n  cache.size: [3GiB]\n"), 0o644)
	list := runCLI(t, dir, "sweep", "--config", "one.yaml", "--list")
	if !strings.Contains(list, "\n1 point (sweep ") {
		t.Errorf("list:\n%s", list)
	}
	out := runCLI(t, dir, "sweep", "--config", "one.yaml", "--out", "r", "--quiet")
	for _, want := range []string{"one.yaml: 1 axis, 1 point (sweep ", "0/1: 1 point, 0 finished before", "(1 part written now"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep := runCLI(t, dir, "report", "r", "--out", "rep")
	if !strings.Contains(rep, "read     1 row from 1 file in r") {
		t.Errorf("report:\n%s", rep)
	}
}
