//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// sameDevice reports whether a and b are on the same file system (a rename
// between them can work); when it cannot tell, it says yes.
func sameDevice(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Dev == sb.Dev
}
