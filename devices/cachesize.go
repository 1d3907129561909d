package devices

import (
	"fmt"
	"strconv"
	"strings"
)

// CacheSize is an expert cache size as users write it (ParseCacheSize):
// Auto, the device's budget; a Percent in (0, 100] of all routed expert
// bytes; or Bytes > 0. Parsed here, outside the simulator, whose
// configuration takes bytes.
type CacheSize struct {
	Auto    bool
	Percent float64
	Bytes   int64
}

// ParseCacheSize parses the forms ResolveCache takes: a size with a unit
// ("3GiB", "512 MiB", "3.5GB"), a percentage ("40%") or "auto".
func ParseCacheSize(s string) (CacheSize, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "auto":
		return CacheSize{Auto: true}, nil
	case strings.HasSuffix(s, "%"):
		p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
		// NB: written so that NaN fails too.
		if err != nil || !(p > 0 && p <= 100) {
			return CacheSize{}, fmt.Errorf("cache %q: a percentage must be in (0, 100]", s)
		}
		return CacheSize{Percent: p}, nil
	}
	b, err := ParseSize(s)
	if err != nil {
		return CacheSize{}, &CacheSizeError{Size: s, Err: err}
	}
	if b <= 0 {
		return CacheSize{}, fmt.Errorf("cache %q: must be positive", s)
	}
	return CacheSize{Bytes: b}, nil
}

// String is c's canonical spelling: "auto", "40%", or the bytes in the
// largest unit that divides them exactly, binary units first ("3GiB" for
// 3072MiB and 3221225472 alike, "3GB" for 3e9 bytes).
func (c CacheSize) String() string {
	switch {
	case c.Auto:
		return "auto"
	case c.Percent > 0:
		return strconv.FormatFloat(c.Percent, 'g', -1, 64) + "%"
	}
	for _, u := range []struct {
		name string
		v    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if c.Bytes%u.v == 0 {
			return strconv.FormatInt(c.Bytes/u.v, 10) + u.name
		}
	}
	return strconv.FormatInt(c.Bytes, 10) + "B"
}

// ResolveCache turns a cache size as users write it (ParseCacheSize) into
// bytes for model m. auto gives the device's budget for "auto"; nil where no
// device is known, and "auto" is then refused.
func ResolveCache(s string, m *ModelSpec, auto func() (int64, error)) (int64, error) {
	c, err := ParseCacheSize(s)
	switch {
	case err != nil:
		return 0, err
	case c.Auto && auto == nil:
		return 0, fmt.Errorf("cache auto: no device profile to size it from here (give a size such as 3GiB or a percentage such as 40%%)")
	case c.Auto:
		return auto()
	case c.Percent > 0:
		return int64(float64(m.TotalExpertBytes()) * c.Percent / 100), nil
	}
	return c.Bytes, nil
}

// CacheSizeError is a cache size that is not a size at all. Its message
// suggests the forms ResolveCache takes; a caller that takes fewer (a live
// run has no device budget for auto) words its own from Size and Err.
type CacheSizeError struct {
	Size string // as written, trimmed
	Err  error  // why ParseSize refused it
}

func (e *CacheSizeError) Error() string {
	return fmt.Sprintf("cache %q: %v (write e.g. 3GiB, 40%% or auto)", e.Size, e.Err)
}

func (e *CacheSizeError) Unwrap() error { return e.Err }
