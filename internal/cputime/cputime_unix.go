//go:build unix

package cputime

import "syscall"

// seconds is getrusage(2)'s user + system time of the process.
func seconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
