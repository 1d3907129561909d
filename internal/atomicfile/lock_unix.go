//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// lock takes an exclusive lock (flock(2)) on the temporary or staging
// folder at path through a file of its own, held until that file is
// closed: closing the temporary's own file in Commit, before the rename,
// does not release it. nil when the file system cannot lock: the
// temporary then never looks stale to RemoveStale, which needs the lock.
func lock(path string) *os.File {
	return tryLock(path)
}

// tryLock takes the lock of lock without waiting: nil when another open
// file holds it (its writer is alive) or the file system cannot lock.
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
