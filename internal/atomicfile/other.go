//go:build !unix

package atomicfile

import (
	"os"
	"syscall"
)

// tryLock takes no lock here, so RemoveStale removes nothing.
func tryLock(path string) *os.File { return nil }

// raise cannot signal this process here; die exits with 128 + s.
func raise(syscall.Signal) bool { return false }

// sameDevice cannot tell file systems apart here: yes.
func sameDevice(a, b os.FileInfo) bool { return true }
