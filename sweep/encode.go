package sweep

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lessim/lessim/internal/atomicfile"
)

// WriteRows writes rows, with any extra columns (EncodeRowsWith), as one
// results Parquet file at path (the same schema and metadata as a sweep's
// parts), atomically: for tools that write results outside a sweep folder,
// such as lessim validate and lessim ablate.
func WriteRows(path, sweepID string, rows []Row, extra ...Extra) error {
	data, err := EncodeRowsWith(sweepID, rows, extra...)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data)
}

// Extra is a column appended after the results columns, one value per row:
// Strings for a string column, else Ints for an integer column. Tools that
// label results add them (lessim ablate: ablation_step, ablation_order).
type Extra struct {
	Name    string
	Strings []string
	Ints    []int64
}

// EncodeRowsWith is EncodeRows with extra columns after the results columns.
// Each extra must hold one value per row and a name no results column has.
func EncodeRowsWith(sweepID string, rows []Row, extra ...Extra) ([]byte, error) {
	names := ColumnNames()
	for _, x := range extra {
		n := len(x.Ints)
		if x.Strings != nil {
			n = len(x.Strings)
		}
		switch {
		case slices.Contains(names, x.Name):
			return nil, fmt.Errorf("extra column %q: the results already have a column of that name", x.Name)
		case n != len(rows):
			return nil, fmt.Errorf("extra column %q: %d values for %d rows", x.Name, n, len(rows))
		}
		names = append(names, x.Name)
	}
	return encodePart(sweepID, rows, extra...)
}

// arrowType is the Arrow type of an extra column.
func (x *Extra) arrowType() arrow.DataType {
	if x.Strings != nil {
		return arrow.BinaryTypes.String
	}
	return arrow.PrimitiveTypes.Int64
}
