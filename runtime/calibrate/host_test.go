//go:build linux

package calibrate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeTree writes files (path relative to root → content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		path := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSystemFacts: the facts of an Android-like system tree (three CPU
// clusters, one CPU without cpufreq, cpu10 after cpu9, thermal zones of
// which one cannot be read) are read in CPU and zone order; a missing tree
// gives zero values.
func TestSystemFacts(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"proc/meminfo":                           "MemTotal:       11578360 kB\nMemFree:          412044 kB\nMemAvailable:    5123456 kB\n",
		"sys/class/thermal/thermal_zone0/type":   "cpu-0-0-0\n",
		"sys/class/thermal/thermal_zone0/temp":   "41200\n",
		"sys/class/thermal/thermal_zone2/type":   "battery\n",
		"sys/class/thermal/thermal_zone2/temp":   "30000\n",
		"sys/class/thermal/thermal_zone10/type":  "skin, therm=1\n",
		"sys/class/thermal/thermal_zone10/temp":  "-5500\n",
		"sys/class/thermal/thermal_zone1/type":   "sdr0\n", // temp unreadable (absent)
		"sys/class/thermal/cooling_device0/type": "thermal-cpufreq-0\n",
		"sys/devices/system/cpu/online":          "0-10\n",
	}
	for cpu, khz := range []string{"1800000", "1800000", "1800000", "1800000", "2400000", "2400000", "2400000", "", "2400000", "2400000", "3300000"} {
		dir := filepath.Join("sys/devices/system/cpu", "cpu"+strconv.Itoa(cpu))
		if khz == "" {
			files[filepath.Join(dir, "online")] = "0\n" // no cpufreq folder
			continue
		}
		files[filepath.Join(dir, "cpufreq/cpuinfo_max_freq")] = khz + "\n"
	}
	files["sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq"] = "1800000\n"
	writeTree(t, root, files)

	if got, want := CoreMaxMHz(root), "1800,1800,1800,1800,2400,2400,2400,0,2400,2400,3300"; got != want {
		t.Errorf("core max MHz %q, want %q", got, want)
	}
	if got := MemAvailable(root); got != 5123456<<10 {
		t.Errorf("mem available %d", got)
	}
	if got, want := Thermal(root), "cpu-0-0-0=41.2,battery=30.0,skin__therm_1=-5.5"; got != want {
		t.Errorf("thermal %q, want %q", got, want)
	}

	none := filepath.Join(root, "none")
	if CoreMaxMHz(none) != "" || MemAvailable(none) != 0 || Thermal(none) != "" {
		t.Error("facts from a missing tree")
	}
}

// TestSystemFactsHere: this machine's own files read as they should (a
// Linux machine has /proc/meminfo and CPU folders; a VM may have no cpufreq
// and no thermal zones).
func TestSystemFactsHere(t *testing.T) {
	if MemAvailable("/") <= 0 {
		t.Error("no MemAvailable in /proc/meminfo")
	}
	cpus := strings.Split(CoreMaxMHz("/"), ",")
	if len(cpus) < 1 || cpus[0] == "" {
		t.Errorf("no CPUs under /sys: %q", cpus)
	}
	if len(Thermal("/")) > MaxThermalBytes {
		t.Errorf("thermal %d bytes", len(Thermal("/")))
	}
}

// TestReadHost: this machine has a name, a kernel release and RAM.
func TestReadHost(t *testing.T) {
	h := ReadHost()
	if h.Name == "" || !strings.HasPrefix(h.OS, "linux ") || len(h.OS) <= len("linux ") || h.RAMBytes <= 0 {
		t.Errorf("host %+v", h)
	}
}
