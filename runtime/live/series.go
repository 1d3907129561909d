package live

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
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
// TokenSample's JSON fields) to path, atomically: a temporary file in the same
// folder, synced, then renamed; on any error path is left as it was.
func WriteSeries(path string, series []TokenSample) (err error) {
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

	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("series: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	fw, err := pqarrow.NewFileWriter(sc, noClose{tmp}, props, pqarrow.NewArrowWriterProperties())
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
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("series: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("series: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("series: %w", err)
	}
	return nil
}

// noClose hides the file's Close from the Parquet writer, which would close
// it before the sync.
type noClose struct{ f *os.File }

func (w noClose) Write(p []byte) (int, error) { return w.f.Write(p) }
