//go:build !linux && !darwin && !windows

package atomicfile

// FreeSpace is the FreeFunc of this system, which lessim cannot ask for its
// free space: ok is always false, so CheckSpace lets every write through and
// a full disk is reported by the write itself.
func FreeSpace(dir string) (int64, bool, error) { return 0, false, nil }
