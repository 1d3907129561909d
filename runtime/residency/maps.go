//go:build linux

package residency

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mapping is one contiguous memory mapping of a file: Len bytes at address Addr
// showing the file from byte Offset. The kernel may list one mmap as several
// areas (madvise splits them); FindMapping joins adjacent areas that continue
// each other.
type Mapping struct {
	Addr   uintptr
	Offset int64 // file offset shown at Addr
	Len    int64
}

// Covers reports whether the file range [start, end) lies inside the mapping.
func (m Mapping) Covers(start, end int64) bool {
	return start >= m.Offset && end <= m.Offset+m.Len
}

// addr is the address of file offset off; off must be covered.
func (m Mapping) addr(off int64) uintptr { return m.Addr + uintptr(off-m.Offset) }

// FindMapping finds this process's largest mapping of the file at path in
// /proc/self/maps, matched by device and inode (so a renamed path or a hard link
// still matches). No mapping is an error saying so.
func FindMapping(path string) (Mapping, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Mapping{}, fmt.Errorf("find mapping: %w", &os.PathError{Op: "stat", Path: path, Err: err})
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return Mapping{}, fmt.Errorf("find mapping of %s: %w", path, err)
	}
	defer f.Close()
	ms, err := parseMaps(f, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	if err != nil {
		return Mapping{}, fmt.Errorf("find mapping of %s: %w", path, err)
	}
	if len(ms) == 0 {
		return Mapping{}, fmt.Errorf("find mapping: %s is not mapped by this process (looked for device %d:%d inode %d in /proc/self/maps)",
			path, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	}
	best := ms[0]
	for _, m := range ms[1:] {
		if m.Len > best.Len {
			best = m
		}
	}
	return best, nil
}

// parseMaps returns the mappings of the file with the given device and inode in
// a /proc/<pid>/maps listing, adjacent areas that continue each other joined.
// Lines look like "7f12a000-7f12b000 r--s 00001000 fd:01 1234 /path".
func parseMaps(r io.Reader, major, minor uint32, ino uint64) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 63)
		mj, mn, ok2 := strings.Cut(f[3], ":")
		dmaj, err4 := strconv.ParseUint(mj, 16, 32)
		dmin, err5 := strconv.ParseUint(mn, 16, 32)
		inode, err6 := strconv.ParseUint(f[4], 10, 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || err6 != nil || end < start {
			return nil, fmt.Errorf("maps line %d: cannot parse %q", line, sc.Text())
		}
		if inode != ino || uint32(dmaj) != major || uint32(dmin) != minor {
			continue
		}
		m := Mapping{Addr: uintptr(start), Offset: int64(off), Len: int64(end - start)}
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.Addr+uintptr(p.Len) == m.Addr && p.Offset+p.Len == m.Offset {
				p.Len += m.Len
				continue
			}
		}
		out = append(out, m)
	}
	return out, sc.Err()
}
