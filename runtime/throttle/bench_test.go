//go:build linux

package throttle

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkThrottledRead reports O_DIRECT read throughput of a 64 MiB file on a
// real disk unthrottled and throttled to 100 MB/s (95.4 MiB/s); the throttled
// figure should sit just under the limit (DESIGN.md: 199.6 MiB/s at 200 MB/s).
func BenchmarkThrottledRead(b *testing.B) {
	dir, err := os.MkdirTemp("/var/tmp", "lessim-throttle-bench-")
	if err != nil {
		b.Skip(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data.bin")
	if err := os.WriteFile(path, make([]byte, 64<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	buf, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(buf)
	readAll := func() float64 {
		start := time.Now()
		for off := int64(0); off < 64<<20; off += 1 << 20 {
			if _, err := f.ReadAt(buf, off); err != nil {
				b.Fatal(err)
			}
		}
		return 64 / time.Since(start).Seconds()
	}
	for _, limit := range []int64{0, 100e6} {
		name := "unthrottled"
		if limit > 0 {
			name = "100MBps"
		}
		b.Run(name, func(b *testing.B) {
			if limit > 0 {
				th := start(b, Options{File: path, ReadBPS: limit})
				defer th.Close()
			}
			var mibps float64
			for b.Loop() {
				mibps = readAll()
			}
			b.ReportMetric(mibps, "MiB/s")
		})
	}
}
