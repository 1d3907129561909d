package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
)

// TestValidateFailureKeepsOut: validate --target that fails after the
// agent recorded the trace (a cache too small for the trace's model, found
// only then) leaves an existing --out with its old files byte-identical
// and an absent one absent, with no staging folder behind.
func TestValidateFailureKeepsOut(t *testing.T) {
	dir := t.TempDir()
	target, token, _ := startStallAgent(t, filepath.Join(dir, "remote.yaml"))
	for _, exists := range []bool{true, false} {
		sub := filepath.Join(dir, fmt.Sprint(exists))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		old := oldValidation(t, sub, exists)
		out := runCLI(t, sub, "validate", "--target", target, "--token", token, "--device-file", "../remote.yaml", "--policies", "lru",
			"--caches", "40%,1KiB", "--tokens", "8", "--repeats", "1", "--quiet", "--out", "val")
		if !strings.Contains(out, "lessim: validate: the trace's model qwen3-30b-a3b: cache 1KiB (1.00 KiB) is smaller than one layer's top-8") {
			t.Errorf("out exists %v: %s", exists, out)
		}
		checkOldValidation(t, sub, old)
	}
}

// TestValidateIntoExistingOut: a validation into an existing --out
// replaces the files it writes (each by a rename from the staging folder),
// keeps the others, prints the paths under --out and leaves no staging
// folder.
func TestValidateIntoExistingOut(t *testing.T) {
	target, token := startInProcessAgent(t, "qwen3-30b-a3b")
	dir := t.TempDir()
	runCLI(t, dir, "calibrate", "--target", target, "--token", token, "--out", "remote.yaml")
	old := oldValidation(t, dir, true)
	if err := os.WriteFile(filepath.Join(dir, "val", "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runCLI(t, dir, "validate", "--target", target, "--token", token, "--device-file", "remote.yaml", "--policies", "lru",
		"--caches", "40%", "--tokens", "8", "--repeats", "1", "--quiet", "--out", "val")
	for _, want := range []string{"trace val/trace/trace.parquet (recorded by the agent)",
		"wrote val/results.parquet (2 rows), val/table.txt, val/predicted-vs-measured.png, val/predicted-vs-measured.svg\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for name, b := range old {
		if got := readFile(t, filepath.Join(dir, "val", name)); bytes.Equal(got, b) {
			t.Errorf("%s: still the old file", name)
		}
	}
	sameFile(t, filepath.Join(dir, "val", "notes.txt"), []byte("mine"))
	atomictest.NoTemporaries(t, dir)
	atomictest.NoTemporaries(t, filepath.Join(dir, "val"))

	// Reusing the trace inside --out: it is read where it is and left
	// alone; the other files are replaced.
	trace := readFile(t, filepath.Join(dir, "val", "trace", "trace.parquet"))
	results := readFile(t, filepath.Join(dir, "val", "results.parquet"))
	out = runCLI(t, dir, "validate", "--target", target, "--token", token, "--device-file", "remote.yaml", "--policies", "lru,les",
		"--caches", "40%", "--tokens", "8", "--repeats", "1", "--quiet", "--trace", "val/trace/trace.parquet", "--out", "val")
	if !strings.Contains(out, "trace val/trace/trace.parquet (recorded by the agent)") || !strings.Contains(out, "wrote val/results.parquet (4 rows)") {
		t.Errorf("--trace in --out:\n%s", out)
	}
	sameFile(t, filepath.Join(dir, "val", "trace", "trace.parquet"), trace)
	if bytes.Equal(readFile(t, filepath.Join(dir, "val", "results.parquet")), results) {
		t.Error("--trace in --out: results.parquet not replaced")
	}
	atomictest.NoTemporaries(t, dir)

	// An --out that is an input file is refused, the file untouched.
	prof := readFile(t, filepath.Join(dir, "remote.yaml"))
	out = runCLI(t, dir, "validate", "--target", target, "--token", token, "--device-file", "remote.yaml", "--policies", "lru",
		"--caches", "40%", "--tokens", "8", "--repeats", "1", "--quiet", "--out", "remote.yaml")
	if !strings.Contains(out, "lessim: validate: out: remote.yaml exists and is not a folder") {
		t.Errorf("--out at the profile: %s", out)
	}
	sameFile(t, filepath.Join(dir, "remote.yaml"), prof)
	atomictest.NoTemporaries(t, dir)
}

// TestInterruptValidate: a SIGINT to validate --target blocked on the
// agent, once in the handshake with an agent that never answers and once
// in the live runs after the agent recorded the trace (staged then, beside
// --out), ends it as for live, and leaves --out as it was: an existing
// one with its old files byte-identical, an absent one absent, and no
// staging folder behind.
func TestInterruptValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs lessim processes")
	}
	for _, tc := range []struct {
		name   string
		hung   bool // the agent never answers: blocked in the handshake
		exists bool
	}{
		{"handshake", true, false},
		{"runs", false, true},
		{"runs-new-out", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			target, token, eng := startStallAgent(t, filepath.Join(dir, "remote.yaml"))
			old := oldValidation(t, dir, tc.exists)
			var accepted chan struct{}
			if tc.hung {
				target, accepted = silentListener(t)
			}
			cmd, stderr := startMain(t, dir, "validate", "--target", target, "--token", token, "--device-file", "remote.yaml",
				"--policies", "lru", "--caches", "40%", "--tokens", "8", "--repeats", "1", "--quiet", "--out", "val")
			if tc.hung {
				waitFor(t, accepted, "the connection", stderr)
				time.Sleep(100 * time.Millisecond) // the hello sent, waiting for the answer
			} else {
				waitFor(t, eng.entered, "the first live run", stderr)
				staged := atomictest.Temporaries(t, dir)
				if len(staged) != 1 {
					t.Fatalf("staging folders %v beside val during the runs, want 1", staged)
				}
				if _, err := os.Stat(filepath.Join(staged[0], "trace", "trace.parquet")); err != nil {
					t.Errorf("the recorded trace is not staged: %v", err)
				}
			}
			cmd.Process.Signal(syscall.SIGINT)
			if !tc.hung {
				waitFor(t, eng.released, "the agent's run cancelled", stderr)
			}
			endedBy(t, cmd, stderr, syscall.SIGINT, "lessim: interrupted\n")
			checkOldValidation(t, dir, old)
		})
	}
}

// oldValidation makes dir/val the output of an earlier validation (a
// trace, results and a table of made-up bytes) when exists, and returns
// its files (nil: val absent).
func oldValidation(t *testing.T, dir string, exists bool) map[string][]byte {
	t.Helper()
	if !exists {
		return nil
	}
	old := map[string][]byte{"trace/trace.parquet": []byte("old trace"), "results.parquet": []byte("old rows"), "table.txt": []byte("old table")}
	for name, b := range old {
		p := filepath.Join(dir, "val", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return old
}

// checkOldValidation fails the test unless dir/val holds exactly old (is
// absent for nil) and no staging folder is left in dir.
func checkOldValidation(t *testing.T, dir string, old map[string][]byte) {
	t.Helper()
	atomictest.NoTemporaries(t, dir)
	val := filepath.Join(dir, "val")
	if old == nil {
		if _, err := os.Stat(val); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("val: %v, want absent as before", err)
		}
		return
	}
	var files []string
	filepath.WalkDir(val, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(val, p)
			files = append(files, rel)
		}
		return nil
	})
	if len(files) != len(old) {
		t.Errorf("val holds %v, want only the old %d files", files, len(old))
	}
	for name, b := range old {
		sameFile(t, filepath.Join(val, name), b)
	}
}

// silentListener accepts connections on a loopback port and never answers
// (a hung agent); it says on accepted when one arrives.
func silentListener(t *testing.T) (target string, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = make(chan struct{}, 8)
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
	})
	return "tcp://" + ln.Addr().String(), accepted
}
