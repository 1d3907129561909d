package devices

import (
	"math"
	"strings"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in   string
		kind Kind
		want float64
		err  string // substring of the error; "" = no error
	}{
		{"12 GiB", Size, 12 << 30, ""},
		{"16 KiB", Size, 16384, ""},
		{"16KiB", Size, 16384, ""},
		{"4096 B", Size, 4096, ""},
		{"1.5 GB", Size, 1.5e9, ""},
		{"  2 TiB ", Size, 2 << 40, ""},
		{"-16 KiB", Size, -16384, ""},
		{"4096", Size, 0, "has no unit"},
		{"4 Gb", Size, 0, `unknown size unit "Gb"`},
		{"4 kib", Size, 0, "valid: B, KB"},
		{"75.8 GB/s", Rate, 75.8e9, ""},
		{"1810 MiB/s", Rate, 1810 << 20, ""},
		{"1e3 B/s", Rate, 1000, ""},
		{"75.8 GB", Rate, 0, `unknown rate unit "GB"`},
		{"2.2 ms", Duration, 2.2e6, ""},
		{"80 us", Duration, 80e3, ""},
		{"80 µs", Duration, 80e3, ""},
		{"1 s", Duration, 1e9, ""},
		{"5 ns", Duration, 5, ""},
		{"5 min", Duration, 0, "unknown duration unit"},
		{"1.5 TFLOPS", Throughput, 1.5e12, ""},
		{"400 GFLOP/s", Throughput, 400e9, ""},
		{"4.5 PFLOPS", Throughput, 4.5e15, ""},
		{"0.6", Dimensionless, 0.6, ""},
		{"60%", Dimensionless, 0.6, ""},
		{"4", Dimensionless, 4, ""},
		{"4 lanes", Dimensionless, 0, "unknown number unit"},
		{"", Size, 0, "empty size"},
		{"GiB", Size, 0, "is not a size"},
		{"1..2 GiB", Size, 0, "is not a size"},
		{"NaN", Dimensionless, 0, "not a number"},
		{"Inf", Dimensionless, 0, "not a number"},
		{"1e999 B", Size, 0, "is not a size"},
	}
	for _, tc := range tests {
		got, err := ParseQuantity(tc.in, tc.kind)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseQuantity(%q, %v) error = %v, want containing %q", tc.in, tc.kind, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseQuantity(%q, %v): %v", tc.in, tc.kind, err)
			continue
		}
		if math.Abs(got-tc.want) > 1e-9*math.Abs(tc.want) {
			t.Errorf("ParseQuantity(%q, %v) = %v, want %v", tc.in, tc.kind, got, tc.want)
		}
	}
}

func TestParseSizeAndDurationRound(t *testing.T) {
	if got, err := ParseSize("1.5 KiB"); err != nil || got != 1536 {
		t.Errorf("ParseSize(1.5 KiB) = %d, %v; want 1536", got, err)
	}
	if got, err := ParseSize("0.3 B"); err != nil || got != 0 {
		t.Errorf("ParseSize(0.3 B) = %d, %v; want 0", got, err)
	}
	if got, err := ParseDuration("2.2 ms"); err != nil || got != 2_200_000 {
		t.Errorf("ParseDuration(2.2 ms) = %d, %v; want 2200000", got, err)
	}
	if _, err := ParseSize("1e30 TiB"); err == nil {
		t.Error("ParseSize(1e30 TiB): want an out-of-range error")
	}
	if got, err := ParseRate("2460 MiB/s"); err != nil || got != 2460*(1<<20) {
		t.Errorf("ParseRate(2460 MiB/s) = %v, %v", got, err)
	}
}
