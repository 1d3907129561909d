package sim

import (
	"math"
	"testing"
)

// TestDurationCap: a conversion past maxTime comes back as maxTime+1 (Go's
// float-to-int64 conversion of 2^63 or more is implementation-defined), so
// that a run adding it is refused, never wrapped; one at maxTime is exact.
func TestDurationCap(t *testing.T) {
	for _, c := range []struct {
		amount, rate float64
		want         Time
	}{
		{float64(maxTime), 1e9, maxTime},
		{float64(maxTime) * 2, 1e9, maxTime + 1},
		{1e30, 1, maxTime + 1},
		{math.MaxFloat64, 1e-300, maxTime + 1},
	} {
		if got := durationNS(c.amount, c.rate); got != c.want {
			t.Errorf("durationNS(%g, %g) = %d, want %d", c.amount, c.rate, got, c.want)
		}
	}
}
