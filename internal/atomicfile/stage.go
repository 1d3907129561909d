package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Stage is an output folder being written as a whole (see the package
// doc). Its methods are not safe for concurrent use.
type Stage struct {
	dir     string   // the output folder, as given
	path    string   // the staging folder
	created bool     // whether dir was absent at NewStage
	home    string   // the folder the staging folder is in
	lock    *os.File // holds the staging folder's lock (see RemoveStale); nil if none
	done    bool     // committed or aborted
	err     error    // result of Commit or Abort
}

// NewStage starts writing the folder dir. The staging folder is made in
// dir's nearest existing ancestor (nothing is created outside it before
// Commit), or in dir itself when dir is a mount point.
func NewStage(dir string) (*Stage, error) {
	if dir == "" {
		return nil, errors.New("empty output folder")
	}
	home, created, err := stageHome(dir)
	if err != nil {
		return nil, err
	}
	prefix := tempPrefix(filepath.Base(filepath.Clean(dir)))
	RemoveStale(home, prefix)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	p, err := os.MkdirTemp(home, prefix+"*")
	if err != nil {
		return nil, folderError(dir, home, err)
	}
	reg.live[p] = struct{}{}
	return &Stage{dir: dir, path: p, created: created, home: home, lock: tryLock(p)}, nil
}

func stageHome(dir string) (string, bool, error) {
	clean := filepath.Clean(dir)
	fi, err := os.Stat(clean)
	switch {
	case err == nil && !fi.IsDir():
		return "", false, fmt.Errorf("output folder %s exists and is not a folder", dir)
	case err == nil:
		parent := filepath.Dir(clean)
		pi, perr := os.Stat(parent)
		if parent == clean || perr != nil || !sameDevice(fi, pi) {
			return clean, false, nil
		}
		return parent, false, nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return "", false, fmt.Errorf("output folder %s: %w", dir, err)
	}
	for p := filepath.Dir(clean); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return p, true, nil
		case err == nil:
			return "", false, fmt.Errorf("output folder %s: %s is not a folder", dir, p)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return "", false, fmt.Errorf("output folder %s: %w", dir, err)
		}
		if filepath.Dir(p) == p {
			return "", false, fmt.Errorf("output folder %s: no ancestor exists", dir)
		}
	}
}

// Dir returns the staging folder: write the files here.
func (s *Stage) Dir() string { return s.path }

// Target returns where path inside the staging folder ends up after
// Commit; any other path is returned as is.
func (s *Stage) Target(path string) string {
	rel, err := filepath.Rel(s.path, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return filepath.Join(s.dir, rel)
}

type move struct {
	from, to string
	mode     os.FileMode
}

// Commit moves every staged file into the output folder by a rename, as
// File does; other files there are left alone. Every check runs before
// anything moves, and the moves run under the registry's lock, so a signal
// sees none or all of them. Then the folders are synced and the staging
// folder removed. A second call returns the first call's result.
func (s *Stage) Commit() error {
	if s.done {
		return s.err
	}
	s.done = true
	reg.mu.Lock()
	dirs, moves, err := s.plan()
	if err == nil {
		err = s.move(dirs, moves)
	}
	reg.mu.Unlock()
	if err != nil {
		s.remove()
		s.err = fmt.Errorf("writing %s: %w", s.dir, err)
		return s.err
	}
	var errs []error
	for _, d := range s.synced(dirs, moves) {
		errs = append(errs, syncDir(d))
	}
	errs = append(errs, s.remove())
	s.err = errors.Join(errs...)
	return s.err
}

// plan lists the folders to create and the files to move, refusing what
// cannot move and a write still in progress. The caller holds reg.mu.
func (s *Stage) plan() (dirs []string, moves []move, err error) {
	err = filepath.WalkDir(s.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == s.path {
			return nil
		}
		to := s.Target(p)
		switch {
		case d.IsDir():
			if fi, err := os.Stat(to); err == nil && !fi.IsDir() {
				return fmt.Errorf("%s exists and is not a folder", to)
			}
			dirs = append(dirs, to)
		case !d.Type().IsRegular():
			return fmt.Errorf("staged %s is not a regular file", p)
		default:
			if _, ok := reg.live[p]; ok {
				return fmt.Errorf("a write of %s is still in progress", to)
			}
			target, mode, err := resolveTarget(to)
			if err != nil {
				return err
			}
			moves = append(moves, move{from: p, to: target, mode: mode})
		}
		return nil
	})
	return dirs, moves, err
}

// move creates the folders and renames the files into place. The caller
// holds reg.mu. NB: a rename failing after plan's checks (rare) leaves the
// files before it moved.
func (s *Stage) move(dirs []string, moves []move) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for i, m := range moves {
		if err := os.Chmod(m.from, m.mode); err != nil {
			return err
		}
		if err := os.Rename(m.from, m.to); err != nil {
			if i > 0 {
				return fmt.Errorf("%w (after %d of %d files moved)", err, i, len(moves))
			}
			return err
		}
	}
	return nil
}

// synced are the folders whose entries Commit changed.
func (s *Stage) synced(dirs []string, moves []move) []string {
	var out []string
	add := func(d string) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if s.created {
		for p := filepath.Dir(filepath.Clean(s.dir)); ; p = filepath.Dir(p) {
			add(p)
			if p == s.home || filepath.Dir(p) == p {
				break
			}
		}
	}
	for _, d := range dirs {
		add(filepath.Dir(d))
	}
	for _, m := range moves {
		add(filepath.Dir(m.to))
	}
	return out
}

// Abort removes the staging folder; after Commit it does nothing (defer it).
func (s *Stage) Abort() error {
	if s.done {
		return nil
	}
	s.done = true
	s.err = errors.New("atomicfile: staging aborted")
	return s.remove()
}

func (s *Stage) remove() error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	delete(reg.live, s.path)
	err := os.RemoveAll(s.path)
	s.lock.Close() // NB: nil when none: its Close is an error, not a panic
	if err != nil {
		return fmt.Errorf("removing the staging folder %s: %w", s.path, err)
	}
	return nil
}
