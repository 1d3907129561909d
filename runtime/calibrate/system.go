//go:build linux

package calibrate

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lessim/lessim/fit"
)

// MemInfo is what /proc/meminfo says about RAM, in bytes.
type MemInfo struct{ Total, Available int64 }

// readMemInfo reads MemTotal and MemAvailable of this system.
func readMemInfo() (MemInfo, error) {
	m := memInfo("/")
	if m.Total <= 0 || m.Available <= 0 || m.Available > m.Total {
		return m, fmt.Errorf("calibrate: /proc/meminfo has no usable MemTotal/MemAvailable (%d, %d)", m.Total, m.Available)
	}
	return m, nil
}

// ReadAhead is the read-ahead window of the disk under path's file system, from
// sysfs queue/read_ahead_kb (of the whole disk for a partition).
type ReadAhead struct {
	Bytes int64
	File  string // the sysfs file read
}

func readAhead(path string) (ReadAhead, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ReadAhead{}, fmt.Errorf("calibrate: %w", &os.PathError{Op: "stat", Path: path, Err: err})
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	dir, err := filepath.EvalSymlinks("/sys/dev/block/" + dev)
	if err != nil {
		return ReadAhead{}, fmt.Errorf("calibrate: %s is on device %s, which is not a block device: no read-ahead to read", path, dev)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} { // a partition's queue is its disk's
		file := filepath.Join(d, "queue", "read_ahead_kb")
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || kb < 0 {
			return ReadAhead{}, fmt.Errorf("calibrate: %s: %q is not a size in KiB", file, data)
		}
		return ReadAhead{Bytes: kb << 10, File: file}, nil
	}
	return ReadAhead{}, fmt.Errorf("calibrate: no queue/read_ahead_kb for device %s in sysfs", dev)
}

// memBandwidth streams over a buffer of n bytes with one goroutine per CPU
// (GOMAXPROCS), each summing its share as 64-bit words, samples times: bytes ÷
// wall time; it returns their summary and the best sample. The buffer is
// written once first so every page is backed.
func memBandwidth(n int64, samples int) (Summary, float64) {
	words := make([]uint64, n/8)
	for i := range words {
		words[i] = uint64(i)
	}
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(words) + workers - 1) / workers
	var out []float64
	for range samples {
		var wg sync.WaitGroup
		sums := make([]uint64, workers)
		start := time.Now()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				part := words[min(w*chunk, len(words)):min((w+1)*chunk, len(words))]
				var a, b, c, d uint64
				for i := 0; i+3 < len(part); i += 4 {
					a += part[i]
					b += part[i+1]
					c += part[i+2]
					d += part[i+3]
				}
				sums[w] = a + b + c + d
			}()
		}
		wg.Wait()
		out = append(out, float64(len(words)*8)/time.Since(start).Seconds())
		runtime.KeepAlive(sums)
	}
	return Summarize(out), slices.Max(out)
}

// threadCPU is this thread's CPU time in ns (the caller locked the thread).
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// minorFaults is this thread's minor page fault count.
func minorFaults() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}

// faultCost measures the CPU time of one page fault on a file mapping whose pages
// are in the page cache (a minor fault: the compute thread's cost, I/O excluded).
// It maps up to 64 MiB of path, brings it into the page cache, sets MADV_RANDOM,
// and per sample drops the page-table entries (MADV_DONTNEED) and touches every
// page: thread CPU time ÷ minor faults (fault-around and large folios may map
// several pages per fault; the cost is per fault, as the simulator charges it).
// It also returns the mean pages mapped per fault.
func faultCost(path string, samples int) (Summary, float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return Summary{}, 0, fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Summary{}, 0, fmt.Errorf("calibrate: %w", err)
	}
	page := int64(os.Getpagesize())
	n := min(st.Size(), 64<<20) / page * page
	if n < 16*page {
		return Summary{}, 0, fmt.Errorf("calibrate: %s is too small to measure page faults (%d bytes)", path, st.Size())
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return Summary{}, 0, fmt.Errorf("calibrate: mmap %s: %w", path, err)
	}
	defer unix.Munmap(m)
	var x byte
	for i := int64(0); i < n; i += page {
		x += m[i]
	}
	if err := unix.Madvise(m, unix.MADV_RANDOM); err != nil {
		return Summary{}, 0, fmt.Errorf("calibrate: madvise: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out []float64
	var faults int64
	for range samples {
		if err := unix.Madvise(m, unix.MADV_DONTNEED); err != nil {
			return Summary{}, 0, fmt.Errorf("calibrate: madvise: %w", err)
		}
		f0, c0 := minorFaults(), threadCPU()
		for i := int64(0); i < n; i += page {
			x += m[i]
		}
		c1, f1 := threadCPU(), minorFaults()
		if f1 > f0 {
			out = append(out, float64(c1-c0)/float64(f1-f0))
			faults += f1 - f0
		}
	}
	runtime.KeepAlive(x)
	if len(out) == 0 {
		return Summary{}, 0, fmt.Errorf("calibrate: touching %s's mapping caused no page faults", path)
	}
	return Summarize(out), float64(int64(len(out))*(n/page)) / float64(faults), nil
}

// LoadCPU is the compute-thread CPU cost of a synchronous expert load by pread
// from a cold page cache: Fixed + PerByte·bytes ns, a least-squares line through
// N samples of several sizes (I/O wait is not CPU time and is excluded).
type LoadCPU struct {
	FixedNS, PerByteNS float64
	N                  int
	R2                 float64 // coefficient of determination of the line
}

// loadCPU measures LoadCPU with reads of the given sizes at random page-aligned
// offsets, each evicted from the page cache first (POSIX_FADV_DONTNEED).
func loadCPU(path string, sizes []int64, samples int, next func(int64) int64) (LoadCPU, error) {
	f, err := os.Open(path)
	if err != nil {
		return LoadCPU{}, fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return LoadCPU{}, fmt.Errorf("calibrate: %w", err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
		return LoadCPU{}, fmt.Errorf("calibrate: posix_fadvise: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// NB: page-aligned, with the real page size (16 KiB on some phones):
	// POSIX_FADV_DONTNEED keeps a page the range only partly covers.
	page := int64(os.Getpagesize())
	var xs, ys []float64
	for _, sz := range sizes {
		if sz > st.Size() {
			continue
		}
		buf := make([]byte, sz)
		for range samples {
			off := next((st.Size()-sz)/page+1) * page
			if err := unix.Fadvise(int(f.Fd()), off, sz, unix.FADV_DONTNEED); err != nil {
				return LoadCPU{}, fmt.Errorf("calibrate: posix_fadvise: %w", err)
			}
			c0 := threadCPU()
			if _, err := f.ReadAt(buf, off); err != nil {
				return LoadCPU{}, fmt.Errorf("calibrate: pread: %w", err)
			}
			xs, ys = append(xs, float64(sz)), append(ys, float64(threadCPU()-c0))
		}
	}
	if len(xs) < 2 {
		return LoadCPU{}, fmt.Errorf("calibrate: %s is too small to measure pread cost", path)
	}
	l, err := fit.FitLine(xs, ys)
	if err != nil {
		return LoadCPU{}, fmt.Errorf("calibrate: pread cost: %w", err)
	}
	return LoadCPU{FixedNS: l.Intercept, PerByteNS: l.Slope, N: l.N, R2: l.R2}, nil
}

// loadAverage is the 1-minute load average from /proc/loadavg (0 if unreadable).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fs := strings.Fields(string(data))
	if len(fs) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(fs[0], 64)
	return v
}
