package numtext

import (
	"strconv"
	"testing"
)

// TestMessages: every kind of mistake has one wording, naming the value.
func TestMessages(t *testing.T) {
	check := func(got error, want string) {
		t.Helper()
		if got == nil || got.Error() != want {
			t.Errorf("got %v, want %q", got, want)
		}
	}
	_, err := Float("1e309", 64)
	check(err, `"1e309" is not a finite number`)
	_, err = Float("NaN", 64)
	check(err, `"NaN" is not a finite number`)
	_, err = Float("1e39", 32)
	check(err, `"1e39" is not a finite number`)
	_, err = Float("x", 64)
	check(err, `"x" is not a number`)
	_, err = Int("99999999999999999999", 64)
	check(err, `"99999999999999999999" is out of range: an integer in [-9223372036854775808, 9223372036854775807]`)
	_, err = Int("1.5", 64)
	check(err, `"1.5" is not an integer`)
	_, err = Uint("-1", 64)
	check(err, `"-1" is not a non-negative integer`)
	_, err = Uint("99999999999999999999", 64)
	check(err, `"99999999999999999999" is out of range: an integer in [0, 18446744073709551615]`)
	if f, err := Float(" 0.5 ", 64); f != 0.5 || err != nil {
		t.Errorf("Float(0.5) = %v, %v", f, err)
	}
	if n, err := Int("-3", strconv.IntSize); n != -3 || err != nil {
		t.Errorf("Int(-3) = %v, %v", n, err)
	}
}
