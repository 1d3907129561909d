//go:build linux

package calibrate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// FlashPoint is the measured throughput of back-to-back random O_DIRECT reads
// of one size with Lanes reads in flight: total bytes ÷ wall time per sample,
// and for one lane the time per read.
type FlashPoint struct {
	ReadBytes  int64
	Lanes      int
	Throughput Summary // bytes/s, one value per sample
	PerRead    Summary // ns per read (all reads of all samples)
}

// ErrNoDirectIO marks a file system that refuses O_DIRECT.
var ErrNoDirectIO = errors.New("the file system refuses O_DIRECT")

// ErrNotStorage marks a file system with no block device under it (tmpfs, which
// since Linux 6.6 accepts O_DIRECT but reads from RAM; overlay; network file
// systems): there is no flash to measure.
var ErrNotStorage = errors.New("the file system is not on a block device")

// checkStorage fails unless path's file system sits on a block device.
func checkStorage(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("calibrate: %w", &os.PathError{Op: "stat", Path: path, Err: err})
	}
	var fs unix.Statfs_t
	kind := ""
	if unix.Statfs(path, &fs) == nil {
		switch fs.Type {
		case unix.TMPFS_MAGIC:
			kind = "tmpfs, "
		case unix.RAMFS_MAGIC:
			kind = "ramfs, "
		case unix.OVERLAYFS_SUPER_MAGIC:
			kind = "overlay, "
		}
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	if _, err := os.Stat("/sys/dev/block/" + dev); err != nil {
		return fmt.Errorf("calibrate: %s: %w (%sdevice %s): its reads never reach storage, so there is no flash to measure; put the model on the storage to calibrate", path, ErrNotStorage, kind, dev)
	}
	return nil
}

// openDirect opens path with O_DIRECT and proves it with one aligned read, so a
// file system that accepts the flag but not the reads (or ignores it) fails here.
func openDirect(path string) (*os.File, int64, error) {
	if err := checkStorage(path); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if errors.Is(err, unix.EINVAL) {
		return nil, 0, fmt.Errorf("calibrate: %s: %w (tmpfs and some overlay or network file systems do): calibrate needs the model on the storage to measure", path, ErrNoDirectIO)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("calibrate: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("calibrate: %w", err)
	}
	buf, free, err := alignedBuf(directAlign)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	defer free()
	if _, err := f.ReadAt(buf, 0); err != nil {
		f.Close()
		if errors.Is(err, unix.EINVAL) {
			return nil, 0, fmt.Errorf("calibrate: %s: %w (an aligned read failed with EINVAL)", path, ErrNoDirectIO)
		}
		return nil, 0, fmt.Errorf("calibrate: %s: first O_DIRECT read: %w", path, err)
	}
	return f, st.Size(), nil
}

// alignedBuf is a page-aligned buffer (an anonymous mapping) for O_DIRECT.
func alignedBuf(n int64) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("calibrate: read buffer of %d bytes: %w", n, err)
	}
	return b, func() { unix.Munmap(b) }, nil
}

// measureFlash reads size-byte blocks at random aligned offsets of f (fileSize
// bytes) with lanes goroutines, reads per lane per sample, samples times.
func measureFlash(f *os.File, fileSize, readBytes int64, lanes, reads, samples int, rng *rand.Rand) (FlashPoint, error) {
	p := FlashPoint{ReadBytes: readBytes, Lanes: lanes}
	slots := (fileSize - readBytes) / directAlign
	if slots < 1 {
		return p, fmt.Errorf("calibrate: the model file (%d bytes) is too small for %s reads", fileSize, size(readBytes))
	}
	bufs := make([][]byte, lanes)
	for i := range bufs {
		b, free, err := alignedBuf(readBytes)
		if err != nil {
			return p, err
		}
		defer free()
		bufs[i] = b
	}
	var tput, per []float64
	for range samples {
		offs := make([][]int64, lanes)
		for i := range offs {
			for range reads {
				offs[i] = append(offs[i], rng.Int64N(slots+1)*directAlign)
			}
		}
		times := make([][]float64, lanes)
		errs := make([]error, lanes)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range lanes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, off := range offs[i] {
					t0 := time.Now()
					if _, err := f.ReadAt(bufs[i], off); err != nil {
						errs[i] = fmt.Errorf("calibrate: O_DIRECT read of %d bytes at %d: %w", readBytes, off, err)
						return
					}
					times[i] = append(times[i], float64(time.Since(t0).Nanoseconds()))
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		if err := errors.Join(errs...); err != nil {
			return p, err
		}
		tput = append(tput, float64(int64(lanes*reads)*readBytes)/wall.Seconds())
		for _, ts := range times {
			per = append(per, ts...)
		}
	}
	p.Throughput, p.PerRead = Summarize(tput), Summarize(per)
	return p, nil
}
