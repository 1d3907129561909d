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
// contextCost the recurrent state is counted too (Config.ContextCost). d may
// be nil where no device is known; then "auto" is refused.
func ResolveCacheWith(s string, m *devices.ModelSpec, d *devices.Device, ctxTokens int, contextCost bool) (int64, error) {
	c, err := parseCacheSize(s)
	switch {
	case err != nil:
		return 0, err
	case c.auto && d == nil:
		return 0, fmt.Errorf("cache auto: no device profile to size it from here (give a size such as 3GiB or a percentage such as 40%%)")
	case c.auto:
		b := MemoryBudget(m, d, ctxTokens, contextCost)
		if b <= 0 {
			return 0, fmt.Errorf("cache auto: device %s leaves no RAM for experts (budget %s)", d.Name, FormatBytes(b))
		}
		return b, nil
	case c.percent > 0:
		return int64(float64(m.TotalExpertBytes()) * c.percent / 100), nil
	}
	return c.bytes, nil
}

// CheckCacheSize reports whether s is a cache size as users write it
// (ResolveCache's forms), without a model or device to resolve it against.
func CheckCacheSize(s string) error {
	_, err := parseCacheSize(s)
	return err
}

// cacheSize is a parsed cache size: auto, a percentage in (0, 100], or bytes > 0.
type cacheSize struct {
	auto    bool
	percent float64
	bytes   int64
}

func parseCacheSize(s string) (cacheSize, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "auto":
		return cacheSize{auto: true}, nil
	case strings.HasSuffix(s, "%"):
		p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
		// NB: written so that NaN fails too.
		if err != nil || !(p > 0 && p <= 100) {
			return cacheSize{}, fmt.Errorf("cache %q: a percentage must be in (0, 100]", s)
		}
		return cacheSize{percent: p}, nil
	}
	b, err := devices.ParseSize(s)
	if err != nil {
		return cacheSize{}, &CacheSizeError{Size: s, Err: err}
	}
	if b <= 0 {
		return cacheSize{}, fmt.Errorf("cache %q: must be positive", s)
	}
	return cacheSize{bytes: b}, nil
}

// CacheSizeError is a cache size that is not a size at all. Its message
// suggests the forms ResolveCache takes; a caller that takes fewer (a live
// run has no device budget for auto) words its own from Size and Err.
type CacheSizeError struct {
	Size string // as written, trimmed
	Err  error  // why devices.ParseSize refused it
}

func (e *CacheSizeError) Error() string {
	return fmt.Sprintf("cache %q: %v (write e.g. 3GiB, 40%% or auto)", e.Size, e.Err)
}

func (e *CacheSizeError) Unwrap() error { return e.Err }
