package agent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The system facts a measuring agent reports on Linux and Android (see
// DeviceFacts), read under root ("/" but in tests). Each reader returns the
// zero value for what it cannot read: an Android app's sandbox hides some
// of these files, an adb shell usually sees them all.

// maxThermalBytes bounds DeviceFacts.Thermal (a phone has dozens of zones).
const maxThermalBytes = 1024

// coreMaxMHz lists each CPU's cpuinfo_max_freq (kHz) in MHz, in CPU order.
func coreMaxMHz(root string) string {
	cpus := numbered(filepath.Join(root, "sys/devices/system/cpu"), "cpu")
	mhz := make([]string, len(cpus))
	for i, dir := range cpus {
		khz, _ := readInt(filepath.Join(dir, "cpufreq/cpuinfo_max_freq"))
		mhz[i] = strconv.FormatInt(max(khz, 0)/1000, 10)
	}
	return strings.Join(mhz, ",")
}

// memAvailable is /proc/meminfo's MemAvailable in bytes.
func memAvailable(root string) int64 {
	f, err := os.Open(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil || kb < 0 || kb > 1<<40 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// thermal lists the thermal zones' types and temperatures (the kernel
// reports millidegrees Celsius), in zone order, skipping unreadable zones.
func thermal(root string) string {
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
		if len(name) > 40 { // ASCII by now
			name = name[:40]
		}
		item := fmt.Sprintf("%s=%.1f", name, float64(mc)/1000)
		if b.Len()+1+len(item) > maxThermalBytes {
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
