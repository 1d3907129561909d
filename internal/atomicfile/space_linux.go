package atomicfile

import "golang.org/x/sys/unix"

// FreeSpace is the FreeFunc of this system: statfs(2)'s blocks available to
// unprivileged users times the fragment size (as df and statvfs(3) count
// them; the block size when the fragment size is 0).
func FreeSpace(dir string) (int64, bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	unit := st.Frsize
	if unit <= 0 {
		unit = st.Bsize
	}
	return int64(st.Bavail) * unit, true, nil
}
