package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
)

// mustWrite writes data to path directly (the "old" file of a test).
func mustWrite(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// assertFile checks path's bytes.
func assertFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, want %d (the old file was changed)", path, len(got), len(want))
	}
}

func TestWriteNewAndReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	if err := WriteFile(path, []byte("first")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, []byte("first"))
	if st, _ := os.Stat(path); st.Mode().Perm() != DefaultMode {
		t.Errorf("new file mode %v, want %v", st.Mode().Perm(), DefaultMode)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("second")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, []byte("second"))
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want the old 0600", st.Mode().Perm())
	}
	atomictest.NoTemporaries(t, dir)
}

func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.bin")
	link := filepath.Join(dir, "link.bin")
	mustWrite(t, real, []byte("old"), 0o644)
	if err := os.Symlink("real.bin", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, real, []byte("new"))
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}
}

// TestFuncErrorKeepsOld: the caller's error leaves the old file and no temporary.
func TestFuncErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	old := bytes.Repeat([]byte("old "), 1000)
	mustWrite(t, path, old, 0o644)
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("x"), 1<<20))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	assertFile(t, path, old)
	atomictest.NoTemporaries(t, dir)
}

// failAfter passes n bytes to w and then fails every write, as a disk that
// fills up part way does.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, syscall.ENOSPC
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestFailingWriterKeepsOld: the write fails after N bytes reached the
// temporary (always runs; TestFullDisk is the real thing).
func TestFailingWriterKeepsOld(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 100_000} {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.bin")
		old := []byte("the old contents")
		mustWrite(t, path, old, 0o644)
		err := Write(path, func(w io.Writer) error {
			_, err := io.Copy(&failAfter{w: w, n: n}, bytes.NewReader(make([]byte, 1<<20)))
			return err
		})
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("n=%d: error %v, want ENOSPC", n, err)
		}
		assertFile(t, path, old)
		atomictest.NoTemporaries(t, dir)
	}
}

// TestFullDisk fills a real 1 MiB tmpfs (root only; skipped otherwise).
func TestFullDisk(t *testing.T) {
	dir := atomictest.SmallFS(t, "1m")
	path := filepath.Join(dir, "out.bin")
	old := bytes.Repeat([]byte{7}, 300<<10)
	mustWrite(t, path, old, 0o644)
	err := WriteFile(path, make([]byte, 2<<20))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error %v, want ENOSPC (no space left on device)", err)
	}
	assertFile(t, path, old)
	atomictest.NoTemporaries(t, dir)
	// The space is back: a write that fits succeeds.
	if err := WriteFile(path, []byte("fits")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, []byte("fits"))
}

func TestCreateRefuses(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "file"), []byte("x"), 0o644)
	for _, tc := range []struct{ path, want string }{
		{dir, "exists and is a folder, not a regular file"},
		{"/dev/null", "exists and is a device, not a regular file"},
		{filepath.Join(dir, "no-such-folder", "x"), "cannot write " + filepath.Join(dir, "no-such-folder", "x") + ": folder " + filepath.Join(dir, "no-such-folder") + " does not exist"},
		{filepath.Join(dir, "file", "x"), "cannot write " + filepath.Join(dir, "file", "x") + ": " + filepath.Join(dir, "file") + " is not a folder"},
		{"", "empty output path"},
	} {
		_, err := Create(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ".tmp-") {
			t.Errorf("Create(%q): %v, want %q", tc.path, err, tc.want)
		}
		if err2 := CheckTarget(tc.path); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("CheckTarget(%q): %v, want Create's %v", tc.path, err2, err)
		}
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", st, err)
	}
}

// TestCreateUnwritable: a folder that refuses a new file is named with its
// problem, in the words ablate's and simulate's --plot check uses, and never
// with the temporary's name. As root (which writes anywhere) the real case
// cannot happen; the wording is checked on the error Create gets.
func TestCreateUnwritable(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	want := "cannot write " + filepath.Join(ro, "x") + ": cannot write in " + ro + ": permission denied"
	if os.Geteuid() != 0 {
		if _, err := Create(filepath.Join(ro, "x")); err == nil || err.Error() != want {
			t.Errorf("Create in a read-only folder: %v, want %q", err, want)
		}
	}
	err := folderError(filepath.Join(ro, "x"), ro, &os.PathError{Op: "open", Path: filepath.Join(ro, ".x.tmp-1"), Err: syscall.EACCES})
	if err.Error() != want {
		t.Errorf("folderError: %v, want %q", err, want)
	}
	if err := CheckTarget(filepath.Join(dir, "ok")); err != nil {
		t.Errorf("CheckTarget in a writable folder: %v", err)
	}
	if err := CheckFolder(dir); err != nil {
		t.Errorf("CheckFolder of a writable folder: %v", err)
	}
	if err := CheckFolder(filepath.Join(dir, "none")); err == nil || err.Error() != "folder "+filepath.Join(dir, "none")+" does not exist" || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CheckFolder of a missing folder: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("CheckTarget and CheckFolder left %d entries, want only ro", len(es))
	}
}

// TestCreateUnreachable: a target under a folder that cannot be searched is
// said so, naming the target, not "lstat PATH: permission denied" (a real
// one when not root: root searches every folder).
func TestCreateUnreachable(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	target := filepath.Join(locked, "sub", "x")
	want := "cannot reach " + target + ": a folder on the way cannot be searched (permission denied)"
	if os.Geteuid() != 0 {
		if _, err := Create(target); err == nil || err.Error() != want || !errors.Is(err, os.ErrPermission) {
			t.Errorf("Create under an unsearchable folder: %v, want %q", err, want)
		}
	}
	err := LookupError(target, &os.PathError{Op: "lstat", Path: target, Err: syscall.EACCES})
	if err.Error() != want || !errors.Is(err, os.ErrPermission) {
		t.Errorf("LookupError: %v, want %q", err, want)
	}
	err = LookupError(target, &os.PathError{Op: "lstat", Path: target, Err: syscall.ELOOP})
	if want := "cannot look up " + target + ": too many levels of symbolic links"; err.Error() != want {
		t.Errorf("LookupError: %v, want %q", err, want)
	}
}

// TestSeekAndCommitTwice covers the io.WriteSeeker side and idempotence.
func TestSeekAndCommitTwice(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	var _ io.WriteSeeker = f
	f.Write([]byte("hello world"))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("J"))
	f.WriteAt([]byte("W"), 6)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the target exists before Commit")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	if err := f.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
	assertFile(t, path, []byte("Jello World"))
	atomictest.NoTemporaries(t, dir)
	g, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("discarded"))
	g.Abort()
	if err := g.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	assertFile(t, path, []byte("Jello World"))
	atomictest.NoTemporaries(t, dir)
}

func TestCheckDistinct(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustWrite(t, "in.csv", []byte("x"), 0o644)
	if err := os.Link("in.csv", "hard.csv"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("in.csv", "soft.csv"); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"in.csv", "./in.csv", filepath.Join(dir, "in.csv"), "sub/../in.csv", "hard.csv", "soft.csv"} {
		err := CheckDistinct(out, "other", "in.csv")
		if err == nil || !strings.Contains(err.Error(), "refusing to overwrite an input") {
			t.Errorf("CheckDistinct(%q): %v, want a refusal", out, err)
		}
	}
	for _, out := range []string{"out.parquet", "in.csv.parquet"} {
		if err := CheckDistinct(out, "in.csv", ""); err != nil {
			t.Errorf("CheckDistinct(%q): %v", out, err)
		}
	}
}
