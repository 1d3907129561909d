package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
	"github.com/lessim/lessim/internal/errgolden"
)

// mainArgsEnv makes the test binary run lessim's main with these arguments
// (newline-separated), as the real command does: signal handler included.
const mainArgsEnv = "LESSIM_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(mainArgsEnv); args != "" {
		os.Args = append([]string{"lessim"}, strings.Split(args, "\n")...)
		main()
		os.Exit(0)
	}
	// NB: absolute, as tests change directory.
	errgolden.Path, _ = filepath.Abs(errgolden.Path)
	os.Exit(errgolden.Main(m))
}

// readFile returns path's bytes or fails the test.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameFile fails the test unless path still holds want.
func sameFile(t *testing.T, path string, want []byte) {
	t.Helper()
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Fatalf("%s changed: %d bytes, the old file had %d", path, len(got), len(want))
	}
}

// TestTraceSynthInterrupted: Ctrl-C (a real SIGINT to a real lessim process)
// while trace synth writes over an existing trace leaves that trace
// byte-identical and no temporary, and the process dies of the signal.
func TestTraceSynthInterrupted(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	runCLI(t, dir, "trace", "synth", "--tokens", "20", "--out", "t.parquet")
	path := filepath.Join(dir, "t.parquet")
	old := readFile(t, path)

	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mainArgsEnv+"=trace\nsynth\n--tokens\n1000000\n--quiet\n--out\nt.parquet")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the temporary holds a row group: the write is under way.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if tmp := atomictest.Temporaries(t, dir); len(tmp) == 1 {
			if st, err := os.Stat(tmp[0]); err == nil && st.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no temporary with data after 2 minutes; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("lessim ended with %v (stderr %q), want death by SIGINT", err, stderr.String())
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("lessim status %v, want killed by SIGINT (stderr %q)", ws, stderr.String())
	}
	sameFile(t, path, old)
	atomictest.NoTemporaries(t, dir)
}

// TestWritesOnFullDisk: trace synth and model synth onto a full 1 MiB tmpfs
// are refused up front by the free-space check (statfs of the real tmpfs);
// with the check off (free space unknown) they fail with "no space left on
// device". Either way the old files stay byte-identical and no temporary is
// left (root only; the failing-writer tests in internal/atomicfile always
// run).
func TestWritesOnFullDisk(t *testing.T) {
	dir := atomictest.SmallFS(t, "1m")
	old := bytes.Repeat([]byte("old "), 50_000)
	for _, name := range []string{"t.parquet", "m.gguf"} {
		if err := os.WriteFile(filepath.Join(dir, name), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmds := [][]string{
		{"trace", "synth", "--tokens", "200", "--out", "t.parquet"},
		{"model", "synth", "--layers", "2", "--experts", "8", "--top-k", "2", "--hidden", "256", "--expert-ffn", "256", "--quant", "f16", "--out", "m.gguf"},
	}
	for _, want := range []string{"KiB free in " + dir + ": ", "no space left on device"} {
		if want == "no space left on device" {
			fakeFree(t, 0, false)
		}
		for _, args := range cmds {
			out := runCLI(t, dir, args...)
			if !strings.Contains(out, want) {
				t.Errorf("lessim %s: %q, want %q", strings.Join(args, " "), out, want)
			}
			sameFile(t, filepath.Join(dir, args[len(args)-1]), old)
			atomictest.NoTemporaries(t, dir)
		}
	}
}

// TestTraceImportOverItsInput: --out naming the input is refused before
// anything is read or written, however it is spelled.
func TestTraceImportOverItsInput(t *testing.T) {
	src := readFile(t, filepath.Join("..", "..", "traces", "testdata", "bmoe-small.csv"))
	dir := t.TempDir()
	path := filepath.Join(dir, "x.csv")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("x.csv", filepath.Join(dir, "link.csv")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"x.csv", "./x.csv", path, "link.csv"} {
		got := runCLI(t, dir, "trace", "import", "x.csv", "--out", out)
		if !strings.Contains(got, "lessim: --out: output "+out+" is the input x.csv: refusing to overwrite an input") {
			t.Errorf("--out %s: %q, want a refusal", out, got)
		}
		sameFile(t, path, src)
	}
	if got := runCLI(t, dir, "trace", "import", "x.csv", "--out", "x.parquet"); !strings.HasPrefix(got, "wrote x.parquet") {
		t.Errorf("a distinct --out: %q", got)
	}
}

// TestModelSynthBadOptionsKeepFile: every option at 0, negative or absurd
// is refused naming it, before anything is written: the file already at
// --out stays (today's code deleted it, and wrote 16 layers for --layers 0).
func TestModelSynthBadOptionsKeepFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	old := []byte("a model the user cares about")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--layers", "0", "layers must be positive, got 0"},
		{"--layers", "-3", "layers must be positive, got -3"},
		{"--layers", "100000", "layers 100000 is too large"},
		{"--experts", "0", "experts must be positive"},
		{"--experts", "1000000", "experts 1000000 is too many"},
		{"--top-k", "0", "top-k must be positive"},
		{"--top-k", "65", "top-k 65 exceeds experts 64"},
		{"--hidden", "0", "hidden must be positive"},
		{"--hidden", "-32", "hidden must be positive"},
		{"--hidden", "1073741824", "hidden 1073741824 is too large"},
		{"--expert-ffn", "0", "expert-ffn must be positive"},
		{"--expert-ffn", "524288", "GiB"},
		{"--heads", "0", "heads must be positive"},
		{"--heads-kv", "0", "heads-kv must be positive"},
		{"--head-dim", "0", "head-dim must be positive"},
		{"--head-dim", "1000000", "head-dim 1000000 is too large"},
		{"--context", "0", "context must be positive"},
		{"--context", "1000000000", "context 1000000000 is too large"},
		{"--vocab", "0", "vocab must be positive"},
		{"--vocab", "10", "vocab 10 is below the minimum"},
		{"--quant", "q9", `quant "q9" is not supported`},
		{"--arch", "llama", `arch "llama" is not supported`},
		{"--router-correlation", "1.5", "router-correlation 1.5"},
		{"--router-correlation", "NaN", `"NaN" for "--router-correlation" flag: "NaN" is not a finite number`},
		{"--attention-scale", "0", "attention-scale 0"},
		{"--attention-sharing", "-1", "attention-sharing -1"},
		{"--preset", "fast", `unknown preset "fast"`},
		{"--layrs", "4", "unknown flag: --layrs"},
	} {
		got := runCLI(t, dir, "model", "synth", tc.flag, tc.value, "--out", "m.gguf")
		if !strings.Contains(got, tc.want) || strings.HasPrefix(got, "wrote") {
			t.Errorf("%s %s: %q, want an error with %q", tc.flag, tc.value, got, tc.want)
		}
		sameFile(t, path, old)
	}
	atomictest.NoTemporaries(t, dir)
}
