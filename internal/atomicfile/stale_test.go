//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
)

// backdate sets path's modification time past StaleAge.
func backdate(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-2 * StaleAge)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveStaleAfterSIGKILL: a process killed by SIGKILL (no handler
// runs) mid-write leaves its temporary, and mid-stage its staging folder.
// While it lived, its lock kept them even when old; once it is dead the next
// write of the same target removes them. A fresh leftover (younger than
// StaleAge) and files of other names stay.
func TestRemoveStaleAfterSIGKILL(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	c := startChild(t, out, "stage", "staged")
	stages := atomictest.Temporaries(t, parent)
	if len(stages) != 1 {
		t.Fatalf("%d staging folders, want 1", len(stages))
	}
	backdate(t, stages[0])
	if n := RemoveStale(parent, tempPrefix("out")); n != 0 {
		t.Fatalf("removed %d while the writer lives, want 0", n)
	}
	c.signal(t, syscall.SIGKILL)
	c.cmd.Wait()
	if n := len(atomictest.Temporaries(t, parent)); n != 1 {
		t.Fatalf("%d staging folders after SIGKILL, want the 1 left behind", n)
	}
	fresh := filepath.Join(parent, tempPrefix("out")+"fresh")
	mustWrite(t, fresh, []byte("x"), 0o644)
	other := filepath.Join(parent, ".out.bak")
	mustWrite(t, other, []byte("x"), 0o644)
	backdate(t, other)
	st, err := NewStage(out)
	if err != nil {
		t.Fatal(err)
	}
	st.Abort()
	if _, err := os.Stat(stages[0]); !os.IsNotExist(err) {
		t.Errorf("the dead writer's staging folder is still there: %v", err)
	}
	for _, keep := range []string{fresh, other} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s: %v, want it kept", keep, err)
		}
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "trace.parquet")
	c = startChild(t, path, "", "writing")
	c.signal(t, syscall.SIGKILL)
	c.cmd.Wait()
	left := atomictest.Temporaries(t, dir)
	if len(left) != 1 {
		t.Fatalf("%d temporaries after SIGKILL, want the 1 left behind", len(left))
	}
	backdate(t, left[0])
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Abort()
	atomictest.NoTemporaries(t, dir)
}
