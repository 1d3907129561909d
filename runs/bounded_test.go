package runs

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/internal/textin"
)

// TestMetricsBounded: /dev/zero and a 1 GB file given as a metrics CSV are
// refused (a line longer than the scanner's buffer), and a gzip file whose
// text exceeds MaxMetricsBytes (blank lines, which parse) is refused
// as too large, having decompressed at most MaxMetricsBytes+1 bytes.
func TestMetricsBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.csv")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<30); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", big} {
		if _, err := ReadBMoEMetrics(p); err == nil {
			t.Errorf("%s was read as a metrics CSV", p)
		}
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	line := bytes.Repeat(append(bytes.Repeat([]byte(" "), 1023), '\n'), 1<<10)
	for range MaxMetricsBytes>>20 + 1 {
		zw.Write(line)
	}
	zw.Close()
	_, err := ParseBMoEMetrics(&gz, "bomb.csv.gz")
	if tl := (*textin.TooLargeError)(nil); !errors.As(err, &tl) || tl.Limit != MaxMetricsBytes {
		t.Errorf("a gzip bomb: got %v, want a *textin.TooLargeError", err)
	}
}
