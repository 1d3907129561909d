//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive flock(2) on the temporary or staging folder
// at path, without waiting, through a file of its own that holds it until
// closed; nil when another holds it or the file system cannot lock.
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

// raise sends s to this process and reports whether it was sent.
func raise(s syscall.Signal) bool {
	return syscall.Kill(syscall.Getpid(), s) == nil
}

// sameDevice reports whether a and b are on the same file system (yes when unknown).
func sameDevice(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Dev == sb.Dev
}
