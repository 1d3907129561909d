package sweep

import (
	"github.com/lessim/lessim/internal/errgolden"
	"testing"
)

// TestEncodeRowsWithRefusesBadExtras: an extra column that clashes with a
// results column, or whose length is not the row count, is an error.
func TestEncodeRowsWithRefusesBadExtras(t *testing.T) {
	rows := []Row{{PointID: "a"}, {PointID: "b"}}
	for _, tc := range []struct {
		x Extra
	}{
		{Extra{Name: "point_id", Strings: []string{"x", "y"}}},
		{Extra{Name: "label", Strings: []string{"x"}}},
		{Extra{Name: "order", Ints: []int64{1, 2, 3}}},
	} {
		errgolden.Check(t, tc.x.Name, errgolden.Err(EncodeRowsWith("s", rows, tc.x)))
	}
	if _, err := EncodeRowsWith("s", rows, Extra{Name: "label", Strings: []string{"x", "y"}}, Extra{Name: "order", Ints: []int64{1, 2}}); err != nil {
		t.Fatal(err)
	}
}
