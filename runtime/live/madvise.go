//go:build llamacpp && linux

package live

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/lessim/lessim/runtime/residency"
)

// adviseNormal gives llama.cpp's mapping of path back the kernel's default
// read-ahead (residency.Open set MADV_RANDOM): the stock baseline faults as
// plain llama.cpp does.
func adviseNormal(path string) error {
	m, err := residency.FindMapping(path)
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.Addr, uintptr(m.Len), uintptr(unix.MADV_NORMAL)); e != 0 {
		return fmt.Errorf("live: %s: madvise(NORMAL): %w", path, e)
	}
	return nil
}
