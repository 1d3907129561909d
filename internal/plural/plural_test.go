package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Count(0, "point"), "0 points"},
		{Count(1, "point"), "1 point"},
		{Count(-1, "step"), "-1 step"},
		{Count(2, "point"), "2 points"},
		{CountAs(1, "axis", "axes"), "1 axis"},
		{CountAs(3, "axis", "axes"), "3 axes"},
		{Word(1, "part", "parts"), "part"},
		{Word(0, "part", "parts"), "parts"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
