//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive lock (flock(2)) on the temporary or staging
// folder at path, without waiting, through a file of its own: the lock is
// held until that file is closed (closing the temporary's own file in
// Commit, before the rename, does not release it). nil when another open
// file holds it (its writer is alive) or the file system cannot lock. A
// writer takes it right after creating its temporary; a writer that could
// not is never taken for dead by RemoveStale, which needs the lock too.
func tryLock(path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil
	}
	return f
}
