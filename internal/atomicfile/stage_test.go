package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
)

// stageFiles writes files (path under the staging folder → contents) into
// st.
func stageFiles(t *testing.T, st *Stage, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(st.Dir(), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
}

// assertAbsent fails the test unless path does not exist.
func assertAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v, want absent", path, err)
	}
}

// TestStageCommitNew: a folder absent with two missing ancestors is staged
// beside its nearest existing ancestor (nothing else is created before
// Commit), then created with every file in place; the staging folder is
// gone.
func TestStageCommitNew(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "a", "b", "out")
	st, err := NewStage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Dir(st.Dir()); got != parent {
		t.Errorf("staging folder in %s, want the nearest existing ancestor %s", got, parent)
	}
	if !strings.HasPrefix(filepath.Base(st.Dir()), ".out.tmp-") {
		t.Errorf("staging folder %s, want .out.tmp-RANDOM", st.Dir())
	}
	stageFiles(t, st, map[string]string{"x.txt": "x", "sub/y.txt": "y"})
	if got, want := st.Target(filepath.Join(st.Dir(), "sub", "y.txt")), filepath.Join(dir, "sub", "y.txt"); got != want {
		t.Errorf("Target = %s, want %s", got, want)
	}
	if got := st.Target(filepath.Join(parent, "elsewhere")); got != filepath.Join(parent, "elsewhere") {
		t.Errorf("Target of a path outside the staging folder = %s, want it as is", got)
	}
	assertAbsent(t, filepath.Join(parent, "a"))
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "x.txt"), []byte("x"))
	assertFile(t, filepath.Join(dir, "sub", "y.txt"), []byte("y"))
	if fi, _ := os.Stat(filepath.Join(dir, "x.txt")); fi.Mode().Perm() != DefaultMode {
		t.Errorf("new file mode %v, want %v", fi.Mode().Perm(), DefaultMode)
	}
	atomictest.NoTemporaries(t, parent)
	if err := st.Commit(); err != nil {
		t.Errorf("second Commit: %v, want the first's nil", err)
	}
	if err := st.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
	assertFile(t, filepath.Join(dir, "x.txt"), []byte("x"))
}

// TestStageCommitExisting: into an existing folder, staged files replace
// theirs (keeping their permission bits, through a symlink the file it
// points to), and files it does not stage stay.
func TestStageCommitExisting(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	os.MkdirAll(dir, 0o755)
	mustWrite(t, filepath.Join(dir, "keep.txt"), []byte("keep"), 0o644)
	mustWrite(t, filepath.Join(dir, "x.txt"), []byte("old"), 0o600)
	mustWrite(t, filepath.Join(parent, "real.txt"), []byte("old"), 0o644)
	if err := os.Symlink(filepath.Join(parent, "real.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	st, err := NewStage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Dir(st.Dir()); got != parent {
		t.Errorf("staging folder in %s, want beside %s", got, dir)
	}
	stageFiles(t, st, map[string]string{"x.txt": "new", "link.txt": "new"})
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "keep.txt"), []byte("keep"))
	assertFile(t, filepath.Join(dir, "x.txt"), []byte("new"))
	if fi, _ := os.Stat(filepath.Join(dir, "x.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want the old 0600", fi.Mode().Perm())
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a symlink (%v)", err)
	}
	assertFile(t, filepath.Join(parent, "real.txt"), []byte("new"))
	atomictest.NoTemporaries(t, parent)
}

// TestStageAbort: Abort (and RemoveTemporaries, a signal's cleanup)
// removes the staging folder; an existing folder is untouched, an absent
// one stays absent, and Commit then fails.
func TestStageAbort(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	os.MkdirAll(dir, 0o755)
	mustWrite(t, filepath.Join(dir, "x.txt"), []byte("old"), 0o644)
	absent := filepath.Join(parent, "new")
	for _, d := range []string{dir, absent} {
		for _, end := range []string{"Abort", "RemoveTemporaries"} {
			st, err := NewStage(d)
			if err != nil {
				t.Fatal(err)
			}
			stageFiles(t, st, map[string]string{"x.txt": "new", "sub/y.txt": "y"})
			if end == "Abort" {
				if err := st.Abort(); err != nil {
					t.Fatal(err)
				}
			} else {
				RemoveTemporaries()
			}
			if err := st.Commit(); err == nil {
				t.Errorf("%s %s: Commit succeeded", d, end)
			}
			atomictest.NoTemporaries(t, parent)
		}
	}
	assertFile(t, filepath.Join(dir, "x.txt"), []byte("old"))
	assertAbsent(t, filepath.Join(dir, "sub"))
	assertAbsent(t, absent)
}

// TestStageRefused: an output folder that is a file, or under a file, is
// refused by NewStage; a staged file over a folder, a staged folder over a
// file and a write still in progress are refused by Commit before anything
// moves, and the staging folder is removed.
func TestStageRefused(t *testing.T) {
	parent := t.TempDir()
	mustWrite(t, filepath.Join(parent, "file"), []byte("f"), 0o644)
	for _, d := range []string{filepath.Join(parent, "file"), filepath.Join(parent, "file", "out")} {
		if _, err := NewStage(d); err == nil || !strings.Contains(err.Error(), "not a folder") {
			t.Errorf("NewStage(%s): %v, want a not-a-folder error", d, err)
		}
	}
	if _, err := NewStage(""); err == nil {
		t.Error("NewStage(\"\") succeeded")
	}
	dir := filepath.Join(parent, "out")
	os.MkdirAll(filepath.Join(dir, "taken"), 0o755)
	mustWrite(t, filepath.Join(dir, "flat"), []byte("old"), 0o644)
	mustWrite(t, filepath.Join(dir, "a.txt"), []byte("old"), 0o644)
	for _, tc := range []struct {
		files map[string]string
		open  string // a file being written in the staging folder
		want  string
	}{
		{files: map[string]string{"a.txt": "new", "taken": "new"}, want: "folder"},
		{files: map[string]string{"a.txt": "new", "flat/y.txt": "new"}, want: "not a folder"},
		{files: map[string]string{"a.txt": "new"}, open: "b.txt", want: "still in progress"},
	} {
		st, err := NewStage(dir)
		if err != nil {
			t.Fatal(err)
		}
		stageFiles(t, st, tc.files)
		if tc.open != "" {
			f, err := Create(filepath.Join(st.Dir(), tc.open))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Abort()
			f.Write([]byte("partial"))
		}
		err = st.Commit()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Commit = %v, want an error containing %q", tc.files, err, tc.want)
		}
		assertFile(t, filepath.Join(dir, "a.txt"), []byte("old"))
		assertFile(t, filepath.Join(dir, "flat"), []byte("old"))
		atomictest.NoTemporaries(t, parent)
	}
}

// TestStageMountPoint: an existing output folder that is a mount point (a
// real tmpfs) gets its staging folder inside itself, since a rename cannot
// cross file systems; Commit then works (root only).
func TestStageMountPoint(t *testing.T) {
	dir := atomictest.SmallFS(t, "1m")
	st, err := NewStage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Dir(st.Dir()); got != dir {
		t.Errorf("staging folder in %s, want inside the mount point %s", got, dir)
	}
	stageFiles(t, st, map[string]string{"x.txt": "x"})
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "x.txt"), []byte("x"))
	atomictest.NoTemporaries(t, dir)
}
