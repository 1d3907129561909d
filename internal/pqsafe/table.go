package pqsafe

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ReadTable reads every column of pf (opened with Open; named name in
// errors) into one table, batchRows rows per read (0: arrow-go's default),
// refusing corrupt pages and null list elements. The caller releases it.
func ReadTable(pf *file.Reader, name string, batchRows int64) (tbl arrow.Table, err error) {
	// NB: last resort only: Open checked the footer; a page may still be
	// corrupt in a way only decoding finds.
	defer func() {
		if recover() != nil {
			tbl, err = nil, Recovered(name)
		}
	}()
	if err := CheckListElements(pf, name); err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, Corrupt(name, err)
	}
	tbl, err = fr.ReadTable(context.Background())
	if err != nil {
		return nil, Corrupt(name, err)
	}
	return tbl, nil
}
