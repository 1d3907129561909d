package validation

import (
	"slices"
	"testing"
)

func TestParseGrid(t *testing.T) {
	g, err := ParseGrid("1,2,4", "1,2")
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}}
	if !slices.Equal(g, want) {
		t.Errorf("grid %v, want %v", g, want)
	}
	if g, err := ParseGrid("", ""); g != nil || err != nil {
		t.Errorf("no grid: %v, %v", g, err)
	}
	for _, bad := range [][2]string{{"1,2", ""}, {"", "1"}, {"0,1", "1"}, {"1", "257"}, {"1,1", "1"}, {"x", "1"}} {
		if _, err := ParseGrid(bad[0], bad[1]); err == nil {
			t.Errorf("grid lanes %q threads %q accepted", bad[0], bad[1])
		}
	}
}
