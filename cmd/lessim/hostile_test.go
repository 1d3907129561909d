package main

import (
	"errors"
	"testing"

	"github.com/lessim/lessim/internal/textin"
)

// TestEndlessInputsRefused: /dev/zero given as a device profile, a spec or
// a sweep file is refused as too large (textin reads at most its kind's
// limit, so memory stays within it), and as a metrics CSV it is refused too
// (its first line never ends).
func TestEndlessInputsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"simulate", "--device-file", "/dev/zero"},
		{"simulate", "--spec", "/dev/zero"},
		{"sweep", "--config", "/dev/zero", "--out", "r"},
	} {
		_, _, err := runCLIErr(t, dir, args...)
		if !errors.As(err, new(*textin.TooLargeError)) {
			t.Errorf("%v: got %v, want a *textin.TooLargeError", args, err)
		}
	}
	if _, _, err := runCLIErr(t, dir, "calibrate", "--from-run", "/dev/zero", "--trace", "t.parquet", "--device", "ufs4-phone-12gb", "--out", "p.yaml"); err == nil {
		t.Error("calibrate --from-run /dev/zero: no error")
	}
}
