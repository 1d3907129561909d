//go:build !linux && !darwin

package atomicfile

// FreeSpace is the FreeFunc of other systems (Windows among them), which
// lessim does not ask for their free space: ok is always false, so
// CheckSpace lets every write through and a full disk is reported by the
// write itself.
func FreeSpace(dir string) (int64, bool, error) { return 0, false, nil }
