package sim

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
)

// TestResolveCacheForms: each written form resolves to its bytes, and every
// malformed or unphysical one (NaN among them) is refused with the reason,
// both by ResolveCache and by CheckCacheSize, which needs no model.
func TestResolveCacheForms(t *testing.T) {
	m, err := devices.LookupModel("minicpm-v-4.7-35b-a3b", "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := devices.LoadDevice("iphone-17-pro-max")
	if err != nil {
		t.Fatal(err)
	}
	total := m.TotalExpertBytes()
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"3GiB", 3 << 30},
		{" 512 MiB ", 512 << 20},
		{"50%", total / 2},
		{"100%", total},
	} {
		got, err := ResolveCache(tc.in, m, d, 0)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if err := CheckCacheSize(tc.in); err != nil {
			t.Errorf("CheckCacheSize(%q): %v", tc.in, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"NaN%", "a percentage must be in (0, 100]"},
		{"0%", "a percentage must be in (0, 100]"},
		{"101%", "a percentage must be in (0, 100]"},
		{"Inf%", "a percentage must be in (0, 100]"},
		{"-2GiB", "must be positive"},
		{"0B", "must be positive"},
		{"NaN", "is not a size"},
		{"", "empty size"},
	} {
		_, err := ResolveCache(tc.in, m, d, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ResolveCache(%q): got %v, want %q", tc.in, err, tc.want)
		}
		if err := CheckCacheSize(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckCacheSize(%q): got %v, want %q", tc.in, err, tc.want)
		}
	}
	// NB: callers without a device (live, validate --fit, calibrate
	// --from-run) pass nil; auto is then an error, not a nil dereference.
	if _, err := ResolveCache("auto", m, nil, 0); err == nil || !strings.Contains(err.Error(), "no device profile") {
		t.Errorf("auto without a device: got %v", err)
	}
	if b, err := ResolveCache("auto", m, d, 0); err != nil || b <= 0 {
		t.Errorf("auto with a device: got %d, %v", b, err)
	}
}
