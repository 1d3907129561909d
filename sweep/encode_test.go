package sweep

import (
	"strings"
	"testing"
)

// TestEncodeRowsWithRefusesBadExtras: an extra column that clashes with a
// results column, or whose length is not the row count, is an error.
func TestEncodeRowsWithRefusesBadExtras(t *testing.T) {
	rows := []Row{{PointID: "a"}, {PointID: "b"}}
	for _, tc := range []struct {
		x    Extra
		want string
	}{
		{Extra{Name: "point_id", Strings: []string{"x", "y"}}, "already have a column"},
		{Extra{Name: "label", Strings: []string{"x"}}, "1 values for 2 rows"},
		{Extra{Name: "order", Ints: []int64{1, 2, 3}}, "3 values for 2 rows"},
	} {
		if _, err := EncodeRowsWith("s", rows, tc.x); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.x.Name, err, tc.want)
		}
	}
	if _, err := EncodeRowsWith("s", rows, Extra{Name: "label", Strings: []string{"x", "y"}}, Extra{Name: "order", Ints: []int64{1, 2}}); err != nil {
		t.Fatal(err)
	}
}
