package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lessim/lessim/devices"
)

// ResolveCache turns a cache size as users write it into bytes:
//   - a size with a unit, "3GiB", "512 MiB", "3.5GB";
//   - a percentage of all routed expert bytes, "40%";
//   - "auto", the device's budget for ctxTokens of context (DeviceBudget).
func ResolveCache(s string, m *devices.ModelSpec, d *devices.Device, ctxTokens int) (int64, error) {
	return ResolveCacheWith(s, m, d, ctxTokens, false)
}

// ResolveCacheWith is ResolveCache with "auto" taken from MemoryBudget: with
// contextCost the recurrent state is counted too (Config.ContextCost).
func ResolveCacheWith(s string, m *devices.ModelSpec, d *devices.Device, ctxTokens int, contextCost bool) (int64, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "auto":
		b := MemoryBudget(m, d, ctxTokens, contextCost)
		if b <= 0 {
			return 0, fmt.Errorf("cache auto: device %s leaves no RAM for experts (budget %s)", d.Name, FormatBytes(b))
		}
		return b, nil
	case strings.HasSuffix(s, "%"):
		p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
		if err != nil || p <= 0 || p > 100 {
			return 0, fmt.Errorf("cache %q: a percentage must be in (0, 100]", s)
		}
		return int64(float64(m.TotalExpertBytes()) * p / 100), nil
	}
	b, err := devices.ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("cache %q: %v (write e.g. 3GiB, 40%% or auto)", s, err)
	}
	if b <= 0 {
		return 0, fmt.Errorf("cache %q: must be positive", s)
	}
	return b, nil
}
