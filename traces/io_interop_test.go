package traces

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"
)

// TestInteropParquetGo reads a trace written by Writer with parquet-go, an
// independent Parquet implementation (pure Go, not arrow-based), and compares
// every value with the steps written: a check that the files are plain,
// standard Parquet and not merely readable by the library that wrote them.
func TestInteropParquetGo(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 4, experts: 16, topK: 3, hidden: 5, depth: 2, logits: true, routerInputs: true})
	steps := ioTestSteps(rand.New(rand.NewPCG(10, 10)), m, 40, true)
	data := ioWrite(t, m, steps, 37) // several row groups

	f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := f.Lookup(MetaKey); !ok || got != mustJSON(t, m) {
		t.Errorf("parquet-go sees %s = %q", MetaKey, got)
	}
	if got, _ := f.Lookup(VersionKey); got != FormatVersion {
		t.Errorf("parquet-go sees %s = %q", VersionKey, got)
	}
	if got, want := f.NumRows(), int64(len(steps)*4); got != want {
		t.Fatalf("parquet-go counts %d rows, want %d", got, want)
	}
	cols := f.Schema().Columns()
	index := map[string]int{}
	for i, path := range cols {
		index[path[0]] = i
	}
	for _, c := range []string{"seq", "pos", "phase", "pass", "layer", "experts", "weights", "logits", "lookahead_1", "lookahead_2", "router_input", "hit", "compute_ns"} {
		if _, ok := index[c]; !ok {
			t.Fatalf("parquet-go finds no column %s in %v", c, cols)
		}
	}

	r := pq.NewReader(f)
	defer r.Close()
	buf := make([]pq.Row, 16)
	row := 0
	for {
		n, err := r.ReadRows(buf)
		for _, pr := range buf[:n] {
			byCol := make([][]pq.Value, len(cols))
			pr.Range(func(c int, v []pq.Value) bool { byCol[c] = v; return true })
			s, l := &steps[row/4], row%4
			ls := &s.Layers[l]
			var la1, la2 []float32
			if len(ls.Lookahead) > 0 {
				la1 = ls.Lookahead[0]
			}
			if len(ls.Lookahead) > 1 {
				la2 = ls.Lookahead[1]
			}
			checks := []struct {
				col  string
				got  string
				want string
			}{
				{"seq", pgScalar(byCol[index["seq"]]), fmt.Sprint(s.Seq)},
				{"pos", pgScalar(byCol[index["pos"]]), fmt.Sprint(s.Pos)},
				{"phase", pgScalar(byCol[index["phase"]]), fmt.Sprint(uint8(s.Phase))},
				{"pass", pgScalar(byCol[index["pass"]]), fmt.Sprint(s.Pass)},
				{"layer", pgScalar(byCol[index["layer"]]), fmt.Sprint(l)},
				{"compute_ns", pgScalar(byCol[index["compute_ns"]]), fmt.Sprint(ls.ComputeNS)},
				{"experts", pgList(byCol[index["experts"]]), fmtList(ls.Experts)},
				{"weights", pgList(byCol[index["weights"]]), fmtList(ls.Weights)},
				{"logits", pgList(byCol[index["logits"]]), fmtList(ls.Logits)},
				{"lookahead_1", pgList(byCol[index["lookahead_1"]]), fmtList(la1)},
				{"lookahead_2", pgList(byCol[index["lookahead_2"]]), fmtList(la2)},
				{"router_input", pgList(byCol[index["router_input"]]), fmtList(ls.RouterInput)},
				{"hit", pgList(byCol[index["hit"]]), fmtList(ls.Hit)},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Fatalf("row %d %s: parquet-go reads %s, want %s", row, c.col, c.got, c.want)
				}
			}
			row++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if row != len(steps)*4 {
		t.Fatalf("parquet-go read %d rows, want %d", row, len(steps)*4)
	}
}

// pgScalar renders one required scalar value.
func pgScalar(v []pq.Value) string {
	if len(v) != 1 || v[0].IsNull() {
		return fmt.Sprintf("<%d values>", len(v))
	}
	switch v[0].Kind() {
	case pq.Int64:
		return fmt.Sprint(v[0].Int64())
	default:
		return fmt.Sprint(v[0].Int32())
	}
}

// pgList renders a LIST column's values for one row: "null" for a null list
// (definition level 0), else the elements in brackets. Float elements print
// with %v, which round-trips float32 exactly.
func pgList(v []pq.Value) string {
	if len(v) == 1 && v[0].IsNull() && v[0].DefinitionLevel() == 0 {
		return "null"
	}
	parts := make([]string, 0, len(v))
	for _, x := range v {
		if x.IsNull() { // an empty list
			continue
		}
		switch x.Kind() {
		case pq.Float:
			parts = append(parts, fmt.Sprint(x.Float()))
		case pq.Boolean:
			parts = append(parts, fmt.Sprint(x.Boolean()))
		default:
			parts = append(parts, fmt.Sprint(x.Int32()))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtList[T any](v []T) string {
	if v == nil {
		return "null"
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
