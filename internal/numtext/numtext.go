// Package numtext reads numbers as users write them on a command line or in
// an option value, with one wording for every kind of mistake: NaN, ±Inf and
// values beyond the type's range are refused as what they are, never with
// strconv's internal message.
package numtext

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Float is v as a finite number that fits in a float of bits (32 or 64).
func Float(v string, bits int) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), bits)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", v)
	}
	return f, nil
}

// Int is v as a whole number that fits in a signed integer of bits.
func Int(v string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
	if errors.Is(err, strconv.ErrRange) {
		hi := int64(1)<<(bits-1) - 1
		return 0, fmt.Errorf("%q is out of range: an integer in [%d, %d]", v, -hi-1, hi)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	return n, nil
}

// Uint is v as a whole number >= 0 that fits in an unsigned integer of bits.
func Uint(v string, bits int) (uint64, error) {
	s := strings.TrimSpace(v)
	n, err := strconv.ParseUint(s, 10, bits)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is out of range: an integer in [0, %d]", v, uint64(1)<<(bits-1)*2-1)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a non-negative integer", v)
	}
	return n, nil
}
