//go:build llamacpp && linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateTargetFit: validate --target --fit against an agent serving
// the live engine, end to end: the agent records, runs the points and the
// fit points (these with their per-token series, protocol version 4); this
// side fits the profile to the series and simulates with it, and reports
// the held-out MAPE as a local --fit does.
func TestValidateTargetFit(t *testing.T) {
	prof, err := os.ReadFile(filepath.Join(testRoot(t), "devices", "profiles", "ipad-pro-m4.yaml"))
	dir, addr, token := serveLiveAgent(t, "lessim-validate-target-fit-", "4", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), prof, 0o644); err != nil {
		t.Fatal(err)
	}
	target := "tcp://" + addr
	out := runCLI(t, dir, "validate", "--target", target, "--token", token, "--device-file", "base.yaml", "--policies", "lru,les",
		"--caches", "25%,40%", "--tokens", "6", "--repeats", "2", "--fit", "lru:25%,les:40%", "--quiet", "--out", "valfit")
	for _, want := range []string{"measured on measured ", "(recorded by the agent), 6 decode tokens, 2 run(s) per point on the agent",
		"profile valfit/fit/fitted.yaml fitted to separate live runs of lru at 25% and les at 40% (24 tokens): memory.efficiency",
		"MAPE over the 2 other points (held out):"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"fit/fitted.yaml", "fit/lru-25pct-r1.parquet", "fit/les-40pct-r1.parquet", "fit/lru-25pct-r2.parquet", "fit/les-40pct-r2.parquet"} {
		if st, err := os.Stat(filepath.Join(dir, "valfit", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty (%v)", f, err)
		}
	}
	y, err := os.ReadFile(filepath.Join(dir, "valfit", "fit", "fitted.yaml"))
	if err != nil || !strings.Contains(string(y), "fitted from live runs on the agent at "+target) {
		t.Errorf("the fitted profile does not name the agent's runs (%v):\n%s", err, y)
	}
}
