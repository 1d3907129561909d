package calibrate

import (
	"fmt"
	"math"
)

// The profile writes numbers with these units; devices.ParseQuantity reads them.

// mibps formats bytes/s as MiB/s with 1 decimal.
func mibps(v float64) string { return fmt.Sprintf("%.1f MiB/s", v/(1<<20)) }

// gbps formats bytes/s as GB/s with 2 decimals.
func gbps(v float64) string { return fmt.Sprintf("%.2f GB/s", v/1e9) }

// us formats nanoseconds as microseconds with 1 decimal.
func us(ns float64) string { return fmt.Sprintf("%.1f us", ns/1e3) }

// ms formats nanoseconds as milliseconds with 3 decimals.
func ms(ns float64) string { return fmt.Sprintf("%.3f ms", ns/1e6) }

// gflops formats FLOP/s as GFLOPS with 2 decimals.
func gflops(v float64) string { return fmt.Sprintf("%.2f GFLOPS", v/1e9) }

// size formats bytes with the largest IEC unit that divides it, else in bytes.
func size(b int64) string {
	for _, u := range []struct {
		name string
		f    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.f && b%u.f == 0 {
			return fmt.Sprintf("%d %s", b/u.f, u.name)
		}
	}
	return fmt.Sprintf("%d B", b)
}

// plain formats a dimensionless value with 3 decimals.
func plain(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
