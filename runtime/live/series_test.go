package live

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestWriteSeriesRoundTrip writes a series and reads it back with an
// independent Parquet reader.
func TestWriteSeriesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.parquet")
	in := []TokenSample{{Token: 0, WallNS: 5e6, StallNS: 1e6, ComputeNS: 4e6, BytesRead: 4096, Reads: 1, Misses: 1, ResidentBytes: 8192},
		{Token: 1, WallNS: 3e6, ComputeNS: 3e6, Hits: 4, MajorFaults: 2}}
	if err := WriteSeries(path, in); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Token         int64 `parquet:"token"`
		WallNS        int64 `parquet:"wall_ns"`
		StallNS       int64 `parquet:"stall_ns"`
		Hits          int64 `parquet:"hits"`
		MajorFaults   int64 `parquet:"major_faults"`
		ResidentBytes int64 `parquet:"resident_bytes"`
	}
	rows, err := parquet.ReadFile[row](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].WallNS != 5e6 || rows[0].StallNS != 1e6 || rows[0].ResidentBytes != 8192 || rows[1].Hits != 4 || rows[1].MajorFaults != 2 || rows[1].Token != 1 {
		t.Fatalf("read back %+v", rows)
	}
	es, _ := os.ReadDir(filepath.Dir(path))
	if len(es) != 1 {
		t.Fatalf("folder holds %d entries, want only the series (no temporary left)", len(es))
	}
	if err := WriteSeries(filepath.Join(t.TempDir(), "no", "such", "x.parquet"), in); err == nil {
		t.Fatal("writing into a missing folder: no error")
	}
}
