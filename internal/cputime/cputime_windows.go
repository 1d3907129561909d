package cputime

import "golang.org/x/sys/windows"

// seconds is GetProcessTimes' kernel + user time of the process.
func seconds() float64 {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	// NB: Filetime counts 100 ns intervals.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return float64(ticks(kernel)+ticks(user)) * 100e-9
}
