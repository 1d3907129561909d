package cputime

import "testing"

// TestSecondsGrows: CPU time is positive and grows with work.
func TestSecondsGrows(t *testing.T) {
	a := Seconds()
	x := 0
	for i := range 200_000_000 {
		x += i & 7
	}
	b := Seconds()
	if a <= 0 || b <= a || x == 0 {
		t.Errorf("CPU seconds %g then %g after the work, want positive and growing", a, b)
	}
}
