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

// raise sends s to this process (its default action restored, it ends the
// process); it reports whether it was sent.
func raise(s syscall.Signal) bool {
	return syscall.Kill(syscall.Getpid(), s) == nil
}

// sameDevice reports whether a and b are on the same file system (a rename
// between them can work); when it cannot tell, it says yes.
func sameDevice(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Dev == sb.Dev
}
