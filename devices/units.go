package devices

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind is the dimension of a profile quantity; it decides which units its
// value may carry and the SI unit it resolves to.
type Kind int

// The quantity kinds a profile uses.
const (
	Dimensionless Kind = iota // plain number or percentage: "0.6", "60%"
	Size                      // bytes: "16 KiB", "12 GiB", "4096 B"
	Rate                      // bytes per second: "75.8 GB/s", "1810 MiB/s"
	Duration                  // nanoseconds: "2.2 ms", "80 us"
	Throughput                // FLOP per second: "1.5 TFLOPS"
)

// String names the kind as error messages use it.
func (k Kind) String() string {
	switch k {
	case Dimensionless:
		return "number"
	case Size:
		return "size"
	case Rate:
		return "rate"
	case Duration:
		return "duration"
	case Throughput:
		return "compute throughput"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// sizeUnits are byte multiples: SI (powers of 1000) and IEC (powers of 1024).
var sizeUnits = []unitFactor{
	{"B", 1},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
}

var durationUnits = []unitFactor{
	{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9},
}

var flopsUnits = []unitFactor{
	{"FLOPS", 1}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
	{"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
}

type unitFactor struct {
	name   string
	factor float64
}

// units returns the units valid for k, rates being sizes per second.
func (k Kind) units() []unitFactor {
	switch k {
	case Size:
		return sizeUnits
	case Rate:
		out := make([]unitFactor, len(sizeUnits))
		for i, u := range sizeUnits {
			out[i] = unitFactor{u.name + "/s", u.factor}
		}
		return out
	case Duration:
		return durationUnits
	case Throughput:
		return flopsUnits
	}
	return []unitFactor{{"%", 0.01}}
}

func unitNames(us []unitFactor) string {
	names := make([]string, len(us))
	for i, u := range us {
		names[i] = u.name
	}
	return strings.Join(names, ", ")
}

// ParseQuantity parses s as a quantity of kind k and returns it in SI base
// units (bytes, bytes/s, ns, FLOP/s). A dimensioned kind needs a unit
// ("4 MiB", not "4194304"), so a value is never read in the wrong unit; a
// dimensionless value is a plain number or a percentage. Space between the
// number and the unit is optional. The result is finite and may be zero or
// negative; range checks belong to the caller. NaN and infinities are never
// accepted: not as words ("NaN", "Inf", YAML's ".nan", ".inf"), and not as
// numbers too large for a float64 ("1e999 B", "1e300 TB").
func ParseQuantity(s string, k Kind) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty %s", k)
	}
	// Split at the end of the number: digits, sign, point and exponent.
	i := 0
	for i < len(t) && strings.ContainsRune("0123456789+-.eE", rune(t[i])) {
		// An 'e'/'E' starts a unit (e.g. none today) only if not followed by a digit or sign.
		if (t[i] == 'e' || t[i] == 'E') && (i+1 >= len(t) || !strings.ContainsRune("0123456789+-", rune(t[i+1]))) {
			break
		}
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	v, err := strconv.ParseFloat(num, 64) // NB: out-of-range numbers fail here, so v is finite
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a %s: want a number%s", s, k, unitHint(k))
	}
	if unit == "" {
		if k == Dimensionless {
			return v, nil
		}
		return 0, fmt.Errorf("%q has no unit: a %s needs one of %s", s, k, unitNames(k.units()))
	}
	for _, u := range k.units() {
		if u.name == unit {
			if r := v * u.factor; !math.IsInf(r, 0) {
				return r, nil
			}
			return 0, fmt.Errorf("%q is out of range", s)
		}
	}
	return 0, fmt.Errorf("%q: unknown %s unit %q (valid: %s)", s, k, unit, unitNames(k.units()))
}

func unitHint(k Kind) string {
	if k == Dimensionless {
		return " such as 0.6 or 60%"
	}
	return " and a unit (" + unitNames(k.units()) + ")"
}

// ParseSize parses a byte size such as "16 KiB" or "12 GiB", rounded to a whole byte.
func ParseSize(s string) (int64, error) {
	v, err := ParseQuantity(s, Size)
	if err != nil {
		return 0, err
	}
	if v > math.MaxInt64/2 || v < math.MinInt64/2 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return int64(math.Round(v)), nil
}

// ParseRate parses a bandwidth such as "75.8 GB/s" into bytes per second.
func ParseRate(s string) (float64, error) { return ParseQuantity(s, Rate) }

// ParseDuration parses a duration such as "2.2 ms" or "80 us", rounded to whole nanoseconds.
func ParseDuration(s string) (int64, error) {
	v, err := ParseQuantity(s, Duration)
	if err != nil {
		return 0, err
	}
	if v > math.MaxInt64/2 || v < math.MinInt64/2 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return int64(math.Round(v)), nil
}
