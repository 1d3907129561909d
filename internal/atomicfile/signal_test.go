package atomicfile

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
)

// childEnv makes the test binary a child that writes forever (see TestMain).
const childEnv = "ATOMICFILE_TEST_CHILD"

// TestMain turns the test binary into a writer child when childEnv names a
// target: it installs HandleSignals, starts an atomic write of the target,
// says "writing" on stdout and keeps writing until a signal ends it.
func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		HandleSignals()
		f, err := Create(path)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		chunk := bytes.Repeat([]byte("new "), 16<<10)
		for i := 0; ; i++ {
			if _, err := f.Write(chunk); err != nil {
				os.Exit(4)
			}
			if i == 0 {
				os.Stdout.WriteString("writing\n")
			}
			if i%64 == 63 { // bound the disk use: start over
				f.Seek(0, 0)
			}
			time.Sleep(time.Millisecond)
		}
	}
	os.Exit(m.Run())
}

// TestSignalMidWrite sends a real SIGINT (and SIGTERM) to a process in the
// middle of an atomic write over an existing file: the process must die of
// the signal, the old file stay byte-identical and no temporary remain.
func TestSignalMidWrite(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.parquet")
			old := bytes.Repeat([]byte("old contents "), 10_000)
			mustWrite(t, path, old, 0o644)
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+path)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "writing\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child said %q, %v; stderr %s", line, err, stderr.String())
			}
			if n := len(atomictest.Temporaries(t, dir)); n != 1 {
				t.Fatalf("%d temporaries while writing, want 1", n)
			}
			time.Sleep(50 * time.Millisecond) // well inside the write
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child ended with %v, want death by %v", err, sig)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("child status %v, want killed by %v (stderr %s)", ws, sig, stderr.String())
			}
			assertFile(t, path, old)
			atomictest.NoTemporaries(t, dir)
		})
	}
}

// TestRemoveTemporaries: a command's own handler can clean up; the write's
// Commit then fails and the target is untouched.
func TestRemoveTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	RemoveTemporaries()
	atomictest.NoTemporaries(t, dir)
	if err := f.Commit(); err == nil {
		t.Error("Commit after RemoveTemporaries succeeded")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target exists: %v", err)
	}
}
