package devices

import (
	"strings"
	"testing"
)

// TestResolveCacheForms: each written form resolves to its bytes, and every
// malformed or unphysical one (NaN among them) is refused with the reason,
// both by ResolveCache and by ParseCacheSize, which needs no model.
func TestResolveCacheForms(t *testing.T) {
	m, err := LookupModel("minicpm-v-4.7-35b-a3b", "")
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
		got, err := ResolveCache(tc.in, m, nil)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if _, err := ParseCacheSize(tc.in); err != nil {
			t.Errorf("ParseCacheSize(%q): %v", tc.in, err)
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
		_, err := ResolveCache(tc.in, m, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ResolveCache(%q): got %v, want %q", tc.in, err, tc.want)
		}
		if _, err := ParseCacheSize(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCacheSize(%q): got %v, want %q", tc.in, err, tc.want)
		}
	}
	// NB: callers without a device (live, validate --fit, calibrate
	// --from-run) pass nil; auto is then an error, not a nil dereference.
	if _, err := ResolveCache("auto", m, nil); err == nil || !strings.Contains(err.Error(), "no device profile") {
		t.Errorf("auto without a device: got %v", err)
	}
	if b, err := ResolveCache("auto", m, func() (int64, error) { return 42, nil }); err != nil || b != 42 {
		t.Errorf("auto with a device: got %d, %v", b, err)
	}
}

// TestCacheSizeCanonical: one size written in any unit, or in bytes, has
// one spelling; percentages and auto keep theirs.
func TestCacheSizeCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"3GiB": "3GiB", "3072MiB": "3GiB", "3221225472B": "3GiB", "3221225472 B": "3GiB", " 3 GiB ": "3GiB",
		"1.5GiB": "1536MiB", "3GB": "3GB", "3000MB": "3GB", "1000B": "1KB", "1001 B": "1001B", "40%": "40%", "40.0 %": "40%", "auto": "auto",
	} {
		c, err := ParseCacheSize(in)
		if err != nil || c.String() != want {
			t.Errorf("%q: %q, %v; want %q", in, c, err, want)
		}
	}
	if got := (CacheSize{Bytes: 3 << 30}).String(); got != "3GiB" {
		t.Errorf("3 GiB of bytes: %q", got)
	}
}
