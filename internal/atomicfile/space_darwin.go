package atomicfile

import "golang.org/x/sys/unix"

// FreeSpace is the FreeFunc of this system: statfs(2)'s blocks available to
// unprivileged users (f_bavail) times the fundamental block size (f_bsize).
func FreeSpace(dir string) (int64, bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	return int64(st.Bavail) * int64(st.Bsize), true, nil
}
