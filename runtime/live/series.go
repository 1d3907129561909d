package live

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lessim/lessim/internal/atomicfile"
)

// seriesColumns are the Parquet columns of a token series, in TokenSample's
// field order (the JSON names).
var seriesColumns = []string{"token", "wall_ns", "stall_ns", "compute_ns", "bytes_read", "reads", "hits",
	"inflight_hits", "misses", "prefetch_loads", "major_faults", "resident_bytes", "stray_bytes"}

// values are a sample's columns in seriesColumns order.
func (s TokenSample) values() []int64 {
	return []int64{int64(s.Token), s.WallNS, s.StallNS, s.ComputeNS, s.BytesRead, s.Reads, s.Hits,
		s.InflightHits, s.Misses, s.PrefetchLoads, s.MajorFaults, s.ResidentBytes, s.StrayBytes}
}

// WriteSeries writes one Parquet row per token (int64 columns named as
// TokenSample's JSON fields) to path, atomically (internal/atomicfile): on any
// error path is left as it was.
func WriteSeries(path string, series []TokenSample) error {
	fields := make([]arrow.Field, len(seriesColumns))
	for i, n := range seriesColumns {
		fields[i] = arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int64}
	}
	sc := arrow.NewSchema(fields, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for _, s := range series {
		for i, v := range s.values() {
			rb.Field(i).(*array.Int64Builder).Append(v)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()

	f, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("series: %w", err)
	}
	defer f.Abort() // a no-op once committed
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	fw, err := pqarrow.NewFileWriter(sc, f, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return fmt.Errorf("series: %w", err)
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return fmt.Errorf("series: %w", err)
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("series: %w", err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("series: %w", err)
	}
	return nil
}
