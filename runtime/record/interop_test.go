//go:build llamacpp

package record

import (
	"errors"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/lessim/lessim/traces"
)

// pqRow is one trace row as an independent Parquet implementation
// (parquet-go, not arrow-based) sees it.
type pqRow struct {
	Seq        int32     `parquet:"seq"`
	Pos        int32     `parquet:"pos"`
	Phase      int32     `parquet:"phase"`
	Pass       int32     `parquet:"pass"`
	Layer      int32     `parquet:"layer"`
	Experts    []int32   `parquet:"experts,list"`
	Weights    []float32 `parquet:"weights,list"`
	Logits     []float32 `parquet:"logits,list"`
	Lookahead1 []float32 `parquet:"lookahead_1,list"`
	ComputeNS  int64     `parquet:"compute_ns"`
}

// TestInteropParquetGo reads a recorded trace with parquet-go and compares
// every value with what the lessim reader returns.
func TestInteropParquetGo(t *testing.T) {
	var out string
	_, steps := record(t, 0.7, func(o *Options) { out = o.Out })
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := parquet.NewGenericReader[pqRow](f)
	defer r.Close()
	var rows []pqRow
	buf := make([]pqRow, 64)
	for {
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
			row.Experts, row.Weights, row.Logits, row.Lookahead1 = slices.Clone(row.Experts), slices.Clone(row.Weights), slices.Clone(row.Logits), slices.Clone(row.Lookahead1)
			rows = append(rows, row)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	layers := len(steps[0].Layers)
	if len(rows) != len(steps)*layers {
		t.Fatalf("parquet-go read %d rows, want %d steps × %d layers", len(rows), len(steps), layers)
	}
	for k, row := range rows {
		s, i := steps[k/layers], k%layers
		ls := s.Layers[i]
		var look []float32
		if len(ls.Lookahead) > 0 {
			look = ls.Lookahead[0]
		}
		if row.Seq != s.Seq || row.Pos != s.Pos || row.Phase != int32(s.Phase) || row.Pass != s.Pass || int(row.Layer) != i ||
			!slices.Equal(row.Experts, ls.Experts) || !slices.Equal(row.Weights, ls.Weights) || !slices.Equal(row.Logits, ls.Logits) ||
			!slices.Equal(row.Lookahead1, look) || row.ComputeNS != ls.ComputeNS {
			t.Fatalf("row %d: parquet-go %+v\nlessim reader: seq %d pos %d phase %d pass %d layer %d %+v", k, row, s.Seq, s.Pos, s.Phase, s.Pass, i, ls)
		}
	}
	if steps[0].Phase != traces.Prefill {
		t.Errorf("first step is %s, want prefill", steps[0].Phase)
	}
}
