package main

import (
	"strings"
	"testing"
)

// TestLiveThreadsRange: live refuses --threads outside 1..256 with the
// message record gives (checkThreads), before the model is opened, in
// every build.
func TestLiveThreadsRange(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"0", "-3", "100000"} {
		want := "lessim: --threads " + n + ": want 1..256 llama.cpp compute threads (each is an OS thread; more than the machine's cores only slows decoding)\n"
		if got := runCLI(t, dir, "live", "--model", "missing.gguf", "--threads", n); got != want {
			t.Errorf("live --threads %s: got %q, want %q", n, got, want)
		}
	}
}

// TestLiveSeriesChecked: --series is checked before the model is opened,
// in every build: a folder, or a file in a folder that does not exist,
// failed only when the series was written, after the whole run.
func TestLiveSeriesChecked(t *testing.T) {
	dir := t.TempDir()
	for series, want := range map[string]string{
		".":             "lessim: --series: output . exists and is a folder, not a regular file: refusing to replace it\n",
		"nonexist/s.pq": "lessim: --series: cannot write nonexist/s.pq: folder nonexist does not exist\n",
	} {
		if got := runCLI(t, dir, "live", "--model", "missing.gguf", "--series", series); got != want {
			t.Errorf("live --series %s: got %q, want %q", series, got, want)
		}
	}
}

// TestLiveStockRefusals: with --stock, --lanes, --depth and --no-prefetch
// are refused as not applying to the stock baseline, whatever the policy
// (default, les, lru, ondemand) and whether the run is here or on an agent.
// Before, --depth and --no-prefetch were refused as settings of les under
// another policy, and passed with --policy les until the stock policy check.
func TestLiveStockRefusals(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{
		"--lanes 4":     "lessim: --lanes does not apply to the stock baseline: it reads experts by page faults, not by pread on I/O lanes\n",
		"--depth 2":     "lessim: --depth does not apply to the stock baseline: it is plain mmap with no prefetch, so there is no lookahead depth to set\n",
		"--no-prefetch": "lessim: --no-prefetch does not apply to the stock baseline: it is plain mmap, which never prefetches\n",
	}
	where := map[string][]string{
		"here":     {"--model", "missing.gguf"},
		"on agent": {"--target", "tcp://127.0.0.1:9", "--token", "0123456789abcdef0123456789abcdef"},
	}
	for _, policy := range []string{"", "les", "lru", "ondemand"} {
		for flag, msg := range want {
			for w, run := range where {
				args := append([]string{"live", "--stock"}, run...)
				if policy != "" {
					args = append(args, "--policy", policy)
				}
				args = append(args, strings.Fields(flag)...)
				if got := runCLI(t, dir, args...); got != msg {
					t.Errorf("live --stock %s --policy %q (%s): got %q, want %q", flag, policy, w, got, msg)
				}
			}
		}
	}
}
