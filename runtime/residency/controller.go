//go:build linux

package residency

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lessim/lessim/runtime/gguf"
)

// Controller loads, evicts and measures experts of one GGUF file mapped into this
// process (by llama.cpp, or by the caller in tests). Its methods are safe for
// concurrent use by several lanes; Close must come after the last of them.
type Controller struct {
	path   string
	layout *Layout
	m      Mapping
	fd     *os.File // second descriptor: pread loads and FADV_DONTNEED, opened FADV_RANDOM
	page   int64

	// noPopulate is set when the kernel refused MADV_POPULATE_READ (before
	// Linux 5.14): loaded pages are then mapped by the engine's minor faults.
	noPopulate atomic.Bool
	redrops    atomic.Int64 // evictions of a region repeated (Redrops)
}

// Open builds the layout of the GGUF file at path, finds this process's mapping of
// it in /proc/self/maps and opens the controller on it (see OpenMapping).
func Open(path string) (*Controller, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	layout, err := NewLayout(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	m, err := FindMapping(path)
	if err != nil {
		return nil, err
	}
	return OpenMapping(path, layout, m)
}

// OpenMapping opens the controller for the file at path with the given layout,
// mapped at m. The mapping must cover every expert tensor. It opens a second
// descriptor with POSIX_FADV_RANDOM and sets MADV_RANDOM on the whole mapping, so
// a page fault reads one page, not the device's read-ahead window.
func OpenMapping(path string, layout *Layout, m Mapping) (*Controller, error) {
	for _, t := range layout.Tensors {
		if !m.Covers(t.Start, t.End) {
			return nil, fmt.Errorf("residency: %s: the mapping (file bytes %d..%d) does not cover expert tensor bytes %d..%d",
				path, m.Offset, m.Offset+m.Len, t.Start, t.End)
		}
	}
	page := int64(os.Getpagesize())
	if uintptr(m.Offset)%uintptr(page) != 0 || m.Addr%uintptr(page) != 0 {
		return nil, fmt.Errorf("residency: %s: mapping at %#x offset %d is not page-aligned", path, m.Addr, m.Offset)
	}
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("residency: %w", err)
	}
	if err := unix.Fadvise(int(fd.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
		fd.Close()
		return nil, fmt.Errorf("residency: %s: posix_fadvise(RANDOM): %w", path, err)
	}
	c := &Controller{path: path, layout: layout, m: m, fd: fd, page: page}
	if err := madvise(m.Addr, m.Len, unix.MADV_RANDOM); err != nil {
		fd.Close()
		return nil, fmt.Errorf("residency: %s: madvise(RANDOM): %w", path, err)
	}
	return c, nil
}

// Layout is the file's expert layout.
func (c *Controller) Layout() *Layout { return c.layout }

// PageSize is the page size the alignment rule uses.
func (c *Controller) PageSize() int64 { return c.page }

// Close closes the controller's descriptor. The mapping is not the controller's
// and stays as it is.
func (c *Controller) Close() error {
	if c.fd == nil {
		return nil
	}
	err := c.fd.Close()
	c.fd = nil
	return err
}

// EvictAll evicts every expert tensor whole: MADV_DONTNEED on its pages in the
// mapping, then POSIX_FADV_DONTNEED on the file (pages wholly inside the tensor,
// the inward rule). Call it once at start, after the engine has loaded the model.
// It first syncs the file: the page cache keeps dirty pages whatever
// POSIX_FADV_DONTNEED says, and a model written moments ago (lessim model synth)
// may still be dirty.
func (c *Controller) EvictAll() error {
	if err := c.fd.Sync(); err != nil {
		return fmt.Errorf("residency: %s: fsync before eviction: %w", c.path, err)
	}
	for _, t := range c.layout.Tensors {
		if err := c.drop(t); err != nil {
			return err
		}
	}
	return nil
}

// Evict drops expert e's pages from the mapping and the page cache (pages wholly
// inside its regions; see the package documentation for the alignment rule).
func (c *Controller) Evict(e Expert) error {
	if err := c.layout.Check(e); err != nil {
		return err
	}
	for _, r := range c.layout.Regions(e) {
		if err := c.dropChecked(r); err != nil {
			return fmt.Errorf("evict %v: %w", e, err)
		}
	}
	return nil
}

// evictTries bounds how often an eviction is repeated while pages remain.
const evictTries = 3

// dropChecked drops r's whole pages and checks with mincore that they left,
// dropping again while some remain (at most evictTries times in all).
// NB: POSIX_FADV_DONTNEED skips pages it cannot take at that moment (one
// another CPU has not yet added to the LRU lists, say, right after a lane's
// read of its neighbour); under load that left part of an evicted expert
// resident, which the books counted absent.
func (c *Controller) dropChecked(r Region) error {
	in := inward(r, c.page)
	for try := 0; ; try++ {
		if err := c.drop(r); err != nil {
			return err
		}
		left, _, err := c.residentRange(in)
		if err != nil || left == 0 || try+1 == evictTries {
			return err
		}
		c.redrops.Add(1)
	}
}

// drop evicts the pages wholly inside r.
func (c *Controller) drop(r Region) error {
	in := inward(r, c.page)
	if in.Len() == 0 {
		return nil
	}
	if err := madvise(c.m.addr(in.Start), in.Len(), unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("madvise(DONTNEED) bytes %d..%d: %w", in.Start, in.End, err)
	}
	if err := unix.Fadvise(int(c.fd.Fd()), in.Start, in.Len(), unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise(DONTNEED) bytes %d..%d: %w", in.Start, in.End, err)
	}
	return nil
}

// Load reads expert e's regions with pread into the page cache and returns the
// bytes read. buf is scratch space (its contents are discarded); nil or a short
// buffer is replaced by one of the largest region's size.
func (c *Controller) Load(e Expert, buf []byte) (int64, error) {
	if err := c.layout.Check(e); err != nil {
		return 0, err
	}
	if len(buf) == 0 {
		buf = make([]byte, c.layout.MaxRegion())
	}
	var n int64
	for _, r := range c.layout.Regions(e) {
		for off := r.Start; off < r.End; {
			chunk := buf[:min(int64(len(buf)), r.End-off)]
			k, err := c.fd.ReadAt(chunk, off)
			n += int64(k)
			if err != nil {
				return n, fmt.Errorf("load %v: pread %s at %d: %w", e, c.path, off, err)
			}
			off += int64(k)
		}
		c.populate(r)
	}
	return n, nil
}

// populate maps r's pages, now in the page cache, into the engine's mapping
// (MADV_POPULATE_READ, no I/O), so the expert matmul takes no minor faults
// on the compute thread. A kernel without it (EINVAL) leaves that to the
// faults, once noted.
func (c *Controller) populate(r Region) {
	if c.noPopulate.Load() {
		return
	}
	out := outward(r, c.page)
	if err := madvise(c.m.addr(out.Start), out.Len(), unix.MADV_POPULATE_READ); err != nil {
		c.noPopulate.Store(true)
	}
}

// Redrops is how many times an eviction had to drop a region again because
// mincore still found some of its whole pages resident.
func (c *Controller) Redrops() int64 { return c.redrops.Load() }

// Populates reports whether loads map their pages into the engine's mapping
// (false once the kernel refused MADV_POPULATE_READ).
func (c *Controller) Populates() bool { return !c.noPopulate.Load() }

// Resident is the fraction of expert e's pages (every page its regions touch) that
// are in the page cache, by mincore on the mapping.
func (c *Controller) Resident(e Expert) (float64, error) {
	in, total, err := c.ResidentPages(e)
	if err != nil {
		return 0, err
	}
	if total == 0 {
		return 0, nil
	}
	return float64(in) / float64(total), nil
}

// ResidentPages counts expert e's resident pages and all its pages (outward rule).
func (c *Controller) ResidentPages(e Expert) (resident, total int, err error) {
	if err := c.layout.Check(e); err != nil {
		return 0, 0, err
	}
	for _, r := range c.layout.Regions(e) {
		in, n, err := c.residentRange(r)
		if err != nil {
			return 0, 0, fmt.Errorf("resident %v: %w", e, err)
		}
		resident += in
		total += n
	}
	return resident, total, nil
}

// ResidentBytes counts the resident bytes of the file range r (whole pages,
// outward), e.g. a whole expert tensor.
func (c *Controller) ResidentBytes(r Region) (int64, error) {
	in, _, err := c.residentRange(r)
	return int64(in) * c.page, err
}

// residentRange runs mincore over the pages r touches.
func (c *Controller) residentRange(r Region) (resident, total int, err error) {
	out := outward(r, c.page)
	if !c.m.Covers(out.Start, out.End) {
		out.End = min(out.End, c.m.Offset+c.m.Len) // the file's last page
	}
	n := int((out.Len() + c.page - 1) / c.page)
	if n == 0 {
		return 0, 0, nil
	}
	vec := make([]byte, n)
	if err := mincore(c.m.addr(out.Start), out.Len(), vec); err != nil {
		return 0, 0, fmt.Errorf("mincore bytes %d..%d: %w", out.Start, out.End, err)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, n, nil
}

// madvise advises on [addr, addr+n). The address comes from /proc/self/maps, not
// from a Go pointer, so it goes to the system call as a number.
func madvise(addr uintptr, n int64, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, addr, uintptr(n), uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// mincore fills vec with one byte per page of [addr, addr+n).
func mincore(addr uintptr, n int64, vec []byte) error {
	if len(vec) == 0 {
		return errors.New("mincore: empty vector")
	}
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, addr, uintptr(n), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return e
	}
	return nil
}

// Residency is the resident fraction of every expert, by layer then expert (one
// mincore per region), for checking the books against the page cache.
func (c *Controller) Residency() ([][]float64, error) {
	out := make([][]float64, len(c.layout.Layers))
	for l := range out {
		out[l] = make([]float64, c.layout.Experts)
		for x := range out[l] {
			f, err := c.Resident(Expert{l, x})
			if err != nil {
				return nil, err
			}
			out[l][x] = f
		}
	}
	return out, nil
}

// ResidentExpertBytes is the resident bytes of all expert tensors (whole pages).
func (c *Controller) ResidentExpertBytes() (int64, error) {
	var n int64
	for _, t := range c.layout.Tensors {
		b, err := c.ResidentBytes(t)
		if err != nil {
			return 0, err
		}
		n += b
	}
	return n, nil
}
