package atomicfile

import (
	"fmt"
	"path/filepath"
)

// FreeFunc reports the bytes an unprivileged process can still write in
// dir's file system (ok false: unknown). FreeSpace is the real one.
type FreeFunc func(dir string) (free int64, ok bool, err error)

// SpaceError says a file of about Need bytes cannot fit in Dir's Free bytes.
type SpaceError struct {
	Path string // the target as given
	Dir  string // the folder of the resolved target, absolute
	Need int64  // bytes the write is expected to take
	Free int64  // bytes free in Dir's file system
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("%s: needs about %d bytes, more than the %d bytes free in %s", e.Path, e.Need, e.Free, e.Dir)
}

// CheckSpace refuses, with a *SpaceError, an atomic write of path that
// would take need() bytes when free says its target's folder has less;
// need is called only when the free space is known. NB: the whole size is
// needed even when path exists (the old file goes only at Commit).
func CheckSpace(path string, need func() (int64, error), free FreeFunc) error {
	target, _, err := resolveTarget(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	n, ok, err := free(dir)
	if err != nil || !ok {
		return nil
	}
	want, err := need()
	if err != nil {
		return err
	}
	if want > n {
		return &SpaceError{Path: path, Dir: dir, Need: want, Free: n}
	}
	return nil
}
