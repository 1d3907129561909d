package atomicfile

import "golang.org/x/sys/windows"

// FreeSpace is the FreeFunc of this system: GetDiskFreeSpaceExW's bytes
// available to the caller (its quota included), for the volume of dir.
func FreeSpace(dir string) (int64, bool, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, false, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, false, err
	}
	return int64(min(avail, 1<<63-1)), true, nil
}
