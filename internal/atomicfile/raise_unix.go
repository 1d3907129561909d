//go:build unix

package atomicfile

import "syscall"

// raise sends s to this process (its default action restored, it ends the
// process); it reports whether it was sent.
func raise(s syscall.Signal) bool {
	return syscall.Kill(syscall.Getpid(), s) == nil
}
