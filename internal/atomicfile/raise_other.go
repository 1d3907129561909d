//go:build !unix

package atomicfile

import "syscall"

// raise cannot send a signal to this process on this system (no kill(2));
// die exits with status 128 + s instead.
func raise(syscall.Signal) bool { return false }
