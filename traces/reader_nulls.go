package traces

import (
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lessim/lessim/internal/pqsafe"
)

// pqFindNullElement finds the first null element of the list column col in
// the file from its Parquet levels (pqsafe.FindNullElement) and returns the
// file row and the element's index in that row's list; ok is false when the
// levels show no such element or cannot be read (the caller then reports
// the batch's own inconsistency). It is only called once a batch is known
// to be corrupt (pqList.short, pqList.levelsOK), so its cost (one more pass
// over the column) does not matter.
func pqFindNullElement(pf *file.Reader, col string) (row int64, elem int, ok bool) {
	sc := pf.MetaData().Schema
	for i := range sc.NumColumns() {
		if p := sc.Column(i).ColumnPath(); len(p) > 0 && p[0] == col {
			ne, found, err := pqsafe.FindNullElement(pf, i)
			return ne.Row, ne.Index, found && err == nil
		}
	}
	return 0, 0, false
}
