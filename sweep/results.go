package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/sim"
)

// FormatVersion is the version of the results folder's layout and columns,
// and of what a spec's row holds. A folder written with another version is
// refused (see Manifest), so a resumed sweep never mixes parts of two schemas
// or two simulators. Version 2 added the spec.expert_quant column; version 3
// marks synthetic traces whose routing no longer depends on the lookahead and
// logits settings (traces.Synth draws them from their own streams), so the
// same spec's rows changed.
const FormatVersion = 3

// Parquet key-value metadata keys of a results part.
const (
	FormatKey = "lessim.results.format"
	SweepKey  = "lessim.results.sweep"
)

// Row is one point's outcome: one Parquet row. Its columns are the fields
// below flattened by their JSON names: the row's own fields, then every
// field of the resolved spec under "spec." (nested names joined by "."), then
// every field of the Result under its JSON name (null when the point failed).
type Row struct {
	// PointID is the spec's hash (Point.ID).
	PointID string `json:"point_id"`
	// PointIndex is the point's position in the expanded grid.
	PointIndex int `json:"point_index"`
	// SweepID identifies the grid (Manifest.SweepID).
	SweepID string `json:"sweep_id"`
	// LessimVersion is the version of lessim that ran the point.
	LessimVersion string `json:"lessim_version"`
	// RunHash is the hash of the resolved spec (experiment.Outcome.Hash):
	// it names the run itself, e.g. to match a measured run of that spec.
	RunHash string `json:"run_hash"`
	// Error is why the point could not run ("" when it ran).
	Error string `json:"error"`
	// Spec is the resolved spec (as expanded when resolving failed).
	Spec experiment.Spec `json:"spec"`
	// Result is the run's outcome (nil when Error is set).
	*sim.Result
}

// rowColumns are Row's flattened columns, in schema order.
// NB: without spec.host: a resolved spec, the one a row holds, never has
// a host group (experiment's Resolve drops it).
var rowColumns = slices.DeleteFunc(columnsOf("", reflect.TypeFor[Row]()), func(c column) bool {
	return strings.HasPrefix(c.name, "spec.host.")
})

// ColumnNames lists the results columns in schema order.
func ColumnNames() []string {
	out := make([]string, len(rowColumns))
	for i, c := range rowColumns {
		out[i] = c.name
	}
	return out
}

// rowSchema is the Arrow schema of a results part: the results columns,
// then any extra columns.
func rowSchema(sweepID string, extra []Extra) *arrow.Schema {
	fields := make([]arrow.Field, len(rowColumns), len(rowColumns)+len(extra))
	for i, c := range rowColumns {
		fields[i] = arrow.Field{Name: c.name, Type: c.kind.arrowType(), Nullable: true}
	}
	for i := range extra {
		fields = append(fields, arrow.Field{Name: extra[i].Name, Type: extra[i].arrowType(), Nullable: true})
	}
	md := arrow.NewMetadata([]string{FormatKey, SweepKey}, []string{strconv.Itoa(FormatVersion), sweepID})
	return arrow.NewSchema(fields, &md)
}

// encodePart encodes rows, and any extra columns, as one Parquet file (one
// row group). The extras are checked by the caller.
func encodePart(sweepID string, rows []Row, extra ...Extra) ([]byte, error) {
	sc := rowSchema(sweepID, extra)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for i := range rows {
		rv := reflect.ValueOf(&rows[i]).Elem()
		for c := range rowColumns {
			if err := rowColumns[c].appendTo(rb.Field(c), rv); err != nil {
				return nil, err
			}
		}
		for x := range extra {
			b := rb.Field(len(rowColumns) + x)
			if extra[x].Strings != nil {
				b.(*array.StringBuilder).Append(extra[x].Strings[i])
			} else {
				b.(*array.Int64Builder).Append(extra[x].Ints[i])
			}
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
	)
	fw, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("results writer: %w", err)
	}
	if err := fw.Write(rec); err != nil {
		return nil, errors.Join(fmt.Errorf("writing results: %w", err), fw.Close())
	}
	if err := fw.Close(); err != nil {
		return nil, fmt.Errorf("closing results: %w", err)
	}
	return buf.Bytes(), nil
}
