package main

import (
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
