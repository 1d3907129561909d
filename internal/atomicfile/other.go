//go:build !unix

package atomicfile

import (
	"os"
	"syscall"
)

// tryLock takes no lock on this system (no flock): nil, so a writer holds
// none and RemoveStale removes nothing.
func tryLock(path string) *os.File { return nil }

// raise cannot send a signal to this process on this system (no kill(2));
// die exits with status 128 + s instead.
func raise(syscall.Signal) bool { return false }

// sameDevice cannot tell file systems apart on this system: it says yes,
// and a staging folder goes beside its output folder.
func sameDevice(a, b os.FileInfo) bool { return true }
