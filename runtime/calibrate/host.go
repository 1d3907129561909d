//go:build linux

package calibrate

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The system facts a measuring agent reports on Linux and Android beside a
// calibration (agent.DeviceFacts), read under root ("/" but in tests). Each
// reader returns the zero value for what it cannot read: an Android app's
// sandbox hides some of these files, an adb shell usually sees them all.

// Host names this machine as a measuring agent reports it.
type Host struct {
	Name     string // host name, "unknown host" when the system has none
	OS       string // GOOS and kernel release: "linux 6.1.0-18-amd64"
	RAMBytes int64  // physical RAM (sysinfo(2)); 0 when unknown
}

// ReadHost reads this machine's Host.
func ReadHost() Host {
	h := Host{Name: "unknown host", OS: runtime.GOOS}
	if name, err := os.Hostname(); err == nil && name != "" {
		h.Name = name
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.OS += " " + strings.TrimSpace(string(b))
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.RAMBytes = int64(si.Totalram) * int64(si.Unit)
	}
	return h
}

// MaxThermalBytes bounds Thermal's answer (a phone has dozens of zones).
const MaxThermalBytes = 1024

// CoreMaxMHz lists each CPU's cpuinfo_max_freq (kHz) in MHz, in CPU order,
// comma-separated, 0 where unreadable ("1800,1800,2400,3200").
func CoreMaxMHz(root string) string {
	cpus := numbered(filepath.Join(root, "sys/devices/system/cpu"), "cpu")
	mhz := make([]string, len(cpus))
	for i, dir := range cpus {
		khz, _ := readInt(filepath.Join(dir, "cpufreq/cpuinfo_max_freq"))
		mhz[i] = strconv.FormatInt(max(khz, 0)/1000, 10)
	}
	return strings.Join(mhz, ",")
}

// MemAvailable is /proc/meminfo's MemAvailable in bytes.
func MemAvailable(root string) int64 { return memInfo(root).Available }

// memInfo reads MemTotal and MemAvailable from root's /proc/meminfo (zero
// where absent or implausible; "kB" are KiB).
func memInfo(root string) MemInfo {
	var m MemInfo
	f, err := os.Open(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			continue
		}
		switch fs[0] {
		case "MemTotal:":
			m.Total = kb << 10
		case "MemAvailable:":
			m.Available = kb << 10
		}
	}
	return m
}

// Thermal lists the thermal zones' types and temperatures in °C
// ("TYPE=TEMP,...", the kernel reports millidegrees), in zone order,
// skipping unreadable zones, within MaxThermalBytes.
func Thermal(root string) string {
	var b strings.Builder
	for _, dir := range numbered(filepath.Join(root, "sys/class/thermal"), "thermal_zone") {
		mc, ok := readInt(filepath.Join(dir, "temp"))
		typ, err := os.ReadFile(filepath.Join(dir, "type"))
		if !ok || err != nil || mc < -273150 || mc > 1000000 {
			continue
		}
		name := strings.Map(func(r rune) rune {
			if r <= ' ' || r >= 0x7f || r == ',' || r == '=' {
				return '_'
			}
			return r
		}, strings.TrimSpace(string(typ)))
		item := fmt.Sprintf("%.40s=%.1f", name, float64(mc)/1000) // NB: ASCII by now
		if b.Len()+1+len(item) > MaxThermalBytes {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	return b.String()
}

// numbered lists dir's entries named prefix+N, ordered by N.
func numbered(dir, prefix string) []string {
	entries, _ := os.ReadDir(dir)
	type entry struct {
		n    int
		path string
	}
	var es []entry
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix)); err == nil && strings.HasPrefix(e.Name(), prefix) && n >= 0 {
			es = append(es, entry{n, filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return a.n - b.n })
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.path
	}
	return out
}

// readInt reads a file holding one decimal integer.
func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}
