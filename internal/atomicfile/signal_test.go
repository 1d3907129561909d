package atomicfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
)

// childEnv makes the test binary a child that writes forever (see TestMain);
// modeEnv chooses what it writes and how it meets a signal.
const (
	childEnv = "ATOMICFILE_TEST_CHILD"
	modeEnv  = "ATOMICFILE_TEST_MODE"
)

// TestMain turns the test binary into a child when childEnv names a target
// (see child).
func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		child(path, os.Getenv(modeEnv))
	}
	os.Exit(m.Run())
}

// child installs HandleSignals (its notice says "notice: SIGNAL" on stderr)
// and, by mode:
//   - "": starts an atomic write of path, says "writing" on stdout and
//     keeps writing until a signal ends it;
//   - "stage": stages the folder path (a finished file, one in a subfolder
//     and one being written), says "staged" and keeps writing;
//   - "graceful" and "stubborn": take a NotifyContext context, start a
//     write of path, say "waiting"; when the context is cancelled say
//     "cancelled", then "graceful" aborts its write and ends through
//     Exit(Interrupted()), while "stubborn" keeps writing (a second signal
//     ends it).
func child(path, mode string) {
	HandleSignals(func(sig os.Signal) { fmt.Fprintf(os.Stderr, "notice: %v\n", sig) })
	fail := func(err error) {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(3)
	}
	ctx := context.Background()
	target := path
	switch mode {
	case "stage":
		st, err := NewStage(path)
		if err != nil {
			fail(err)
		}
		os.MkdirAll(filepath.Join(st.Dir(), "sub"), 0o755)
		for _, name := range []string{"done.txt", "sub/done.txt"} {
			if err := WriteFile(filepath.Join(st.Dir(), name), []byte("new")); err != nil {
				fail(err)
			}
		}
		target = filepath.Join(st.Dir(), "big.bin")
	case "graceful", "stubborn":
		var stop func()
		ctx, stop = NotifyContext(ctx)
		defer stop()
	}
	f, err := Create(target)
	if err != nil {
		fail(err)
	}
	say := map[string]string{"": "writing", "stage": "staged", "graceful": "waiting", "stubborn": "waiting"}[mode]
	chunk := bytes.Repeat([]byte("new "), 16<<10)
	for i := 0; ; i++ {
		if _, err := f.Write(chunk); err != nil {
			os.Exit(4)
		}
		if i == 0 {
			os.Stdout.WriteString(say + "\n")
		}
		if i%64 == 63 { // bound the disk use: start over
			f.Seek(0, 0)
		}
		if ctx.Err() != nil && say != "cancelled" {
			say = "cancelled"
			os.Stdout.WriteString(say + "\n")
			if mode == "graceful" {
				f.Abort()
				Exit(Interrupted())
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// childProcess is a running child (see child): its stdout lines, its stderr.
type childProcess struct {
	cmd    *exec.Cmd
	lines  *bufio.Reader
	stderr *bytes.Buffer
}

// startChild starts a child of mode on path and waits for its first line,
// want.
func startChild(t *testing.T, path, mode, want string) *childProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path, modeEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &childProcess{cmd: cmd, lines: bufio.NewReader(out), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c.expect(t, want)
	return c
}

// expect reads the child's next line and fails the test unless it is want.
func (c *childProcess) expect(t *testing.T, want string) {
	t.Helper()
	line, err := c.lines.ReadString('\n')
	if err != nil || line != want+"\n" {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		t.Fatalf("child said %q, %v, want %q; stderr %s", line, err, want, c.stderr.String())
	}
}

// signal sends sig to the child.
func (c *childProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// killedBy waits for the child and fails the test unless it died of sig
// after saying so once (the handler's notice).
func (c *childProcess) killedBy(t *testing.T, sig syscall.Signal) {
	t.Helper()
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child ended with %v, want death by %v (stderr %s)", err, sig, c.stderr.String())
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
		t.Errorf("child status %v, want killed by %v (stderr %s)", ws, sig, c.stderr.String())
	}
	if want := fmt.Sprintf("notice: %v\n", sig); c.stderr.String() != want {
		t.Errorf("child's stderr %q, want %q", c.stderr.String(), want)
	}
}

// TestSignalMidWrite sends a real SIGINT (and SIGTERM) to a process in the
// middle of an atomic write over an existing file: the process must die of
// the signal, the old file stay byte-identical and no temporary remain.
func TestSignalMidWrite(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.parquet")
			old := bytes.Repeat([]byte("old contents "), 10_000)
			mustWrite(t, path, old, 0o644)
			c := startChild(t, path, "", "writing")
			if n := len(atomictest.Temporaries(t, dir)); n != 1 {
				t.Fatalf("%d temporaries while writing, want 1", n)
			}
			time.Sleep(50 * time.Millisecond) // well inside the write
			c.signal(t, sig)
			c.killedBy(t, sig)
			assertFile(t, path, old)
			atomictest.NoTemporaries(t, dir)
		})
	}
}

// TestSignalMidStage: a real SIGINT to a process staging a folder (files
// done, one in a subfolder, one being written) removes the staging folder:
// an existing folder keeps its old files byte-identical, an absent one
// stays absent, and the process dies of the signal.
func TestSignalMidStage(t *testing.T) {
	for _, exists := range []bool{true, false} {
		t.Run(fmt.Sprintf("exists=%v", exists), func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			old := []byte("old")
			if exists {
				os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
				mustWrite(t, filepath.Join(dir, "done.txt"), old, 0o644)
				mustWrite(t, filepath.Join(dir, "sub", "done.txt"), old, 0o644)
			}
			c := startChild(t, dir, "stage", "staged")
			if n := len(atomictest.Temporaries(t, parent)); n != 1 {
				t.Fatalf("%d staging folders beside %s while staging, want 1", n, dir)
			}
			c.signal(t, syscall.SIGINT)
			c.killedBy(t, syscall.SIGINT)
			atomictest.NoTemporaries(t, parent)
			if !exists {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: %v, want absent", dir, err)
				}
				return
			}
			assertFile(t, filepath.Join(dir, "done.txt"), old)
			assertFile(t, filepath.Join(dir, "sub", "done.txt"), old)
			atomictest.NoTemporaries(t, dir)
		})
	}
}

// TestSignalGraceful: with a NotifyContext context, the first signal only
// cancels it; the child then aborts its write and ends through
// Exit(Interrupted()), dying of that signal (SIGINT: 130, SIGTERM: 143 in a
// shell) after one notice. The old file is byte-identical, no temporary
// is left.
func TestSignalGraceful(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x")
			mustWrite(t, path, []byte("old"), 0o644)
			c := startChild(t, path, "graceful", "waiting")
			c.signal(t, sig)
			c.expect(t, "cancelled")
			c.killedBy(t, sig)
			assertFile(t, path, []byte("old"))
			atomictest.NoTemporaries(t, dir)
		})
	}
}

// TestSignalTwice: a command that does not stop when its context is
// cancelled is ended by a second signal at once, its temporaries removed.
func TestSignalTwice(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	mustWrite(t, path, []byte("old"), 0o644)
	c := startChild(t, path, "stubborn", "waiting")
	c.signal(t, syscall.SIGINT)
	c.expect(t, "cancelled")
	if n := len(atomictest.Temporaries(t, dir)); n != 1 {
		t.Fatalf("%d temporaries after the first signal, want the write's 1 (still going)", n)
	}
	c.signal(t, syscall.SIGINT)
	c.killedBy(t, syscall.SIGINT)
	assertFile(t, path, []byte("old"))
	atomictest.NoTemporaries(t, dir)
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

// RemoveTemporaries is the handler's cleanup without its exit: every live
// temporary and staging folder removed, as a signal removes them.
func RemoveTemporaries() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	removeLive()
}
