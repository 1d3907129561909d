//go:build llamacpp

package record

import (
	"runtime/debug"
	"syscall"
)

// lessimVersion is the main module's version as the Go toolchain stamped it
// ("(devel)" for a source build), plus the VCS revision when known.
func lessimVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}

// processCPU is the process's user + system CPU time in ns (0 if unavailable).
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
