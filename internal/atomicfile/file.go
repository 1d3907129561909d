package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultMode is the permission of a new target (an existing one keeps its own).
const DefaultMode os.FileMode = 0o644

// File is a file being written atomically: Commit puts it in place, Abort
// throws it away. Its methods are not safe for concurrent use. It has no
// Close on purpose: a library that closes its sink must not decide whether
// the target is replaced.
type File struct {
	f      *os.File
	target string      // resolved target path
	tmp    string      // temporary's path
	lock   *os.File    // holds the temporary's lock (see RemoveStale); nil if none
	mode   os.FileMode // mode the target gets
	done   bool        // committed or aborted
	err    error       // result of Commit or Abort
}

// Create starts an atomic write of path; nothing at path changes until
// Commit. Its errors name path and its folder's problem, never the temporary.
func Create(path string) (*File, error) {
	target, mode, err := resolveTarget(path)
	if err != nil {
		return nil, err
	}
	RemoveStale(filepath.Dir(target), tempPrefix(filepath.Base(target)))
	reg.mu.Lock()
	defer reg.mu.Unlock()
	f, err := os.CreateTemp(filepath.Dir(target), tempPrefix(filepath.Base(target))+"*")
	if err != nil {
		return nil, folderError(path, filepath.Dir(target), err)
	}
	reg.live[f.Name()] = struct{}{}
	return &File{f: f, target: target, tmp: f.Name(), mode: mode, lock: tryLock(f.Name())}, nil
}

// resolveTarget returns the file to replace (a symlink followed) and its mode.
func resolveTarget(path string) (string, os.FileMode, error) {
	if path == "" {
		return "", 0, errors.New("empty output path")
	}
	target := path
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return "", 0, fmt.Errorf("output %s: %w", path, err)
		}
		fi, err = os.Lstat(target)
	}
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return target, DefaultMode, nil // Create says what is wrong with the folder
	case err != nil:
		return "", 0, LookupError(path, err)
	case !fi.Mode().IsRegular():
		return "", 0, fmt.Errorf("output %s exists and is %s, not a regular file: refusing to replace it", path, Kind(fi.Mode()))
	}
	return target, fi.Mode().Perm(), nil
}

// CheckTarget checks, before a long run, that Create(path) will succeed
// (a temporary is created and removed at once).
func CheckTarget(path string) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	return f.Abort()
}

// CheckFolder checks that folder dir exists and accepts a new file.
func CheckFolder(dir string) error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	f, err := os.CreateTemp(dir, ".lessim-probe.tmp-*")
	if err != nil {
		return folderProblem(dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// folderError is the error of creating a temporary for path in dir.
func folderError(path, dir string, err error) error {
	return fmt.Errorf("cannot write %s: %w", path, folderProblem(dir, err))
}

// folderProblem says what is wrong with folder dir, in which creating a
// file failed with err, in the words a user acts on: "folder x does not
// exist", "x is not a folder", "cannot write in x: permission denied".
func folderProblem(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // NB: the PathError's path is the temporary's
	}
	st, serr := os.Stat(dir)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return &wrapped{fmt.Sprintf("folder %s does not exist", dir), err}
	case serr == nil && !st.IsDir():
		return &wrapped{fmt.Sprintf("%s is not a folder", dir), err}
	}
	return fmt.Errorf("cannot write in %s: %w", dir, err)
}

// LookupError is err, of looking up path, in the words a user acts on
// ("cannot reach x/y: a folder on the way cannot be searched"); it still
// is err (errors.Is).
func LookupError(path string, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	if errors.Is(pe.Err, fs.ErrPermission) {
		return &wrapped{fmt.Sprintf("cannot reach %s: a folder on the way cannot be searched (%v)", path, pe.Err), err}
	}
	return &wrapped{fmt.Sprintf("cannot look up %s: %v", path, pe.Err), err}
}

// wrapped is an error with its own words that still is the error it wraps.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// Kind names what a file of mode m is, with its article ("a folder").
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file (" + m.Type().String() + ")"
}

// Name returns the target path (a symlink resolved).
func (f *File) Name() string { return f.target }

// Write writes p to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// WriteAt writes p at offset off of the temporary file.
func (f *File) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }

// Seek sets the temporary file's offset for the next Write (io.Seeker).
func (f *File) Seek(offset int64, whence int) (int64, error) { return f.f.Seek(offset, whence) }

// Commit syncs the temporary, renames it over the target and syncs the
// folder; on an error before the rename the target is untouched. A second
// call returns the first call's result.
func (f *File) Commit() error {
	if f.done {
		return f.err
	}
	err := errors.Join(f.f.Sync(), f.f.Chmod(f.mode))
	if err == nil {
		err = f.f.Close()
	}
	if err != nil {
		f.Abort()
		f.err = fmt.Errorf("writing %s: %w", f.target, err)
		return f.err
	}
	f.done = true
	reg.mu.Lock()
	err = os.Rename(f.tmp, f.target)
	if err != nil {
		os.Remove(f.tmp)
	}
	delete(reg.live, f.tmp)
	reg.mu.Unlock()
	f.lock.Close() // NB: a nil *os.File's Close is an error, not a panic
	if err != nil {
		f.err = fmt.Errorf("writing %s: %w", f.target, err)
		return f.err
	}
	f.err = syncDir(filepath.Dir(f.target))
	return f.err
}

// Abort removes the temporary; after Commit it does nothing (defer it).
func (f *File) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	f.f.Close()
	reg.mu.Lock()
	err := os.Remove(f.tmp)
	delete(reg.live, f.tmp)
	reg.mu.Unlock()
	f.lock.Close()
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	f.err = errors.New("atomicfile: write aborted")
	return err
}

// syncDir makes a rename in dir durable where the file system can sync a folder.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if e := d.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("syncing folder %s: %w", dir, err)
	}
	return nil
}

// Write writes path atomically with fn, which gets a buffered writer; on
// fn's error nothing at path changes and the error is returned as is.
func Write(path string, fn func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := fn(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// CheckDistinct returns an error if out names the same file as one of
// inputs (empty ones skipped): the same absolute path, or os.SameFile.
func CheckDistinct(out string, inputs ...string) error {
	ao, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	ost, oerr := os.Stat(out)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		ai, err := filepath.Abs(in)
		if err != nil {
			return err
		}
		same := ai == ao
		if !same && oerr == nil {
			if ist, err := os.Stat(in); err == nil {
				same = os.SameFile(ost, ist)
			}
		}
		if same {
			return fmt.Errorf("output %s is the input %s: refusing to overwrite an input (choose another output path)", out, in)
		}
	}
	return nil
}
