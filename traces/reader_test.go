package traces

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ioRows is a trace as JSON-able rows, for writing deliberately bad files with
// arrow directly (bypassing Writer's validation).
type ioRows []map[string]any

// ioBadShape: 4 MoE layers, 8 experts, top-2, lookahead depth 1.
var ioBadShape = ioShape{layers: 4, experts: 8, topK: 2, depth: 1}

// ioGoodRows returns the rows of `tokens` valid decode tokens of ioBadShape.
// Row r is token r/4, layer r%4, experts {r%8, (r+1)%8}.
func ioGoodRows(tokens int) ioRows {
	var rows ioRows
	for t := range tokens {
		for l := range 4 {
			r := len(rows)
			row := map[string]any{
				"seq": 0, "pos": t, "phase": 1, "pass": t, "layer": l,
				"experts": []int32{int32(r % 8), int32((r + 1) % 8)}, "weights": []float32{0.75, 0.25},
				"lookahead_1": nil, "hit": nil, "compute_ns": 1000,
			}
			if l < 3 {
				row["lookahead_1"] = []float32{1, 2, 3, 4, 5, 6, 7, 8}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// ioRawFile writes rows under schema sc (nil = the trace schema of meta) with
// the given key-value metadata (nil values are left out).
func ioRawFile(t *testing.T, meta Meta, sc *arrow.Schema, rows ioRows, kv map[string]*string) []byte {
	t.Helper()
	if sc == nil {
		sc = pqSchema(&meta)
	}
	js, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, bytes.NewReader(js))
	if err != nil {
		t.Fatalf("building record: %v", err)
	}
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if kv[k] != nil {
			if err := fw.AppendKeyValueMetadata(k, *kv[k]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rec.NumRows() > 0 {
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func ioStr(s string) *string { return &s }

// ioKV is the normal metadata for meta.
func ioKV(t *testing.T, meta Meta) map[string]*string {
	return map[string]*string{MetaKey: ioStr(mustJSON(t, meta)), VersionKey: ioStr(FormatVersion)}
}

// TestReaderErrors writes one corrupt file per case and checks the reader's
// error names the file, the row and the reason.
func TestReaderErrors(t *testing.T) {
	meta := ioTestMeta(ioBadShape)
	type tc struct {
		name string
		rows func(ioRows) ioRows      // edits good rows (6 tokens, 24 rows); nil = leave
		sc   func() *arrow.Schema     // nil = the trace schema
		kv   func(map[string]*string) // edits the metadata; nil = leave
		meta func(*Meta)              // edits the meta stored; nil = leave
		want string                   // the whole error message
	}
	swap := func(i, j int) func(ioRows) ioRows {
		return func(r ioRows) ioRows { r[i], r[j] = r[j], r[i]; return r }
	}
	set := func(i int, k string, v any) func(ioRows) ioRows {
		return func(r ioRows) ioRows { r[i][k] = v; return r }
	}
	drop := func(i int) func(ioRows) ioRows {
		return func(r ioRows) ioRows { return slices.Delete(r, i, i+1) }
	}
	withField := func(name string, f arrow.Field) func() *arrow.Schema {
		return func() *arrow.Schema {
			sc := pqSchema(&meta)
			fields := sc.Fields()
			i := sc.FieldIndices(name)[0]
			fields[i] = f
			return arrow.NewSchema(fields, nil)
		}
	}
	cases := []tc{
		{name: "layers out of order", rows: swap(13, 14),
			want: "bad.parquet: row 13: layer 2 after layer 0 (rows must be sorted by token then layer)"},
		{name: "expert out of range", rows: set(6, "experts", []int32{1, 300}),
			want: "bad.parquet: row 6: expert 300 out of range [0,8)"},
		{name: "negative expert", rows: set(21, "experts", []int32{-1, 3}),
			want: "bad.parquet: row 21: expert -1 out of range [0,8)"},
		{name: "duplicate expert", rows: set(9, "experts", []int32{3, 3}),
			want: "bad.parquet: row 9: expert 3 selected twice"},
		{name: "too many experts", rows: set(2, "experts", []int32{0, 1, 2, 3, 4, 5, 6, 7, 0}),
			want: "bad.parquet: row 2: 9 experts selected, the model (io-test) routes each token to 2 (and 2 more problems in token (seq 0, pos 0))"},
		// An empty layer is valid in prefill (prompt tokens llama.cpp does not
		// route at the last layer), but its weights must then be empty too.
		{name: "no experts in prefill", rows: func(r ioRows) ioRows {
			for i := range 4 {
				r[i]["phase"] = 0
			}
			r[2]["experts"] = []int32{}
			return r
		}, want: "bad.parquet: row 2: 2 weights for 0 experts"},
		// A decode pass routes every MoE layer.
		{name: "no experts in decode", rows: func(r ioRows) ioRows {
			r[6]["experts"], r[6]["weights"] = []int32{}, []float32{}
			return r
		}, want: "bad.parquet: row 6: a decode token routes no experts (a decode pass routes every MoE layer)"},
		{name: "missing layer", rows: drop(7),
			want: "bad.parquet: row 7: token (seq 0, pos 1) has 3 layers, want 4 (next row is seq 0, pos 2)"},
		{name: "file ends mid-token", rows: drop(23),
			want: "bad.parquet: row 22: token (seq 0, pos 5) has 3 layers, want 4 (file ends)"},
		{name: "token starts past layer 0", rows: drop(0),
			want: "bad.parquet: row 0: token (seq 0, pos 0) starts at layer 1, want 0 (rows must be sorted by token then layer)"},
		{name: "layer out of range", rows: set(5, "layer", 9),
			want: "bad.parquet: row 5: layer 9 out of range [0,3]"},
		{name: "phase invalid", rows: set(17, "phase", 3),
			want: "bad.parquet: row 17: phase 3 out of range [0,2]"},
		{name: "phase changes inside a token", rows: set(17, "phase", 0),
			want: "bad.parquet: row 17: phase 0 differs from phase 1 of the token's layer 0"},
		{name: "negative pos", rows: set(8, "pos", -4),
			want: "bad.parquet: row 8: pos -4 out of range [0,2147483647]"},
		{name: "weights length", rows: set(4, "weights", []float32{1}),
			want: "bad.parquet: row 4: 1 weights for 2 experts"},
		{name: "hit length", rows: set(4, "hit", []bool{true, false, true}),
			want: "bad.parquet: row 4: 3 hit flags for 2 experts"},
		{name: "lookahead past the last layer", rows: set(11, "lookahead_1", []float32{1, 2, 3, 4, 5, 6, 7, 8}),
			want: "bad.parquet: row 11: lookahead depth 1 scores layer 4, past the last MoE layer 3"},
		{name: "lookahead length", rows: set(12, "lookahead_1", []float32{1, 2, 3}),
			want: "bad.parquet: row 12: lookahead depth 1 has 3 scores, want 8"},
		{name: "negative compute_ns", rows: set(3, "compute_ns", -5),
			want: "bad.parquet: row 3: compute_ns -5 out of range [0,9223372036854775807]"},
		{name: "null experts", rows: set(10, "experts", nil),
			sc:   withField(colExperts, arrow.Field{Name: colExperts, Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32), Nullable: true}),
			want: "bad.parquet: row 10: experts is null"},
		{name: "null expert element", rows: set(10, "experts", []any{1, nil}),
			sc:   withField(colExperts, arrow.Field{Name: colExperts, Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}),
			want: "bad.parquet: row 10: experts[1] is null"},
		// The trace schema's elements are required: arrow-go reads a null one
		// written anyway as a missing value and shifts the rest, so the reader
		// finds it in the Parquet levels.
		{name: "null element of a required-element list", rows: set(10, "experts", []any{1, nil}),
			want: "bad.parquet: row 10: experts[1] is null"},
		{name: "null weight element", rows: set(17, "weights", []any{0.5, nil}),
			want: "bad.parquet: row 17: weights[1] is null"},
		{name: "null first expert element", rows: set(10, "experts", []any{nil, 1}),
			sc:   withField(colExperts, arrow.Field{Name: colExperts, Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}),
			want: "bad.parquet: row 10: experts[0] is null"},
		// arrow-go does not count a null first element of a required-element
		// list at all (the list reads one shorter, offsets and values agree):
		// the reader finds it from the batch's Parquet level count.
		{name: "null first element of a required-element list", rows: set(10, "experts", []any{nil, 1}),
			want: "bad.parquet: row 10: experts[0] is null"},
		{name: "null first weight element", rows: set(17, "weights", []any{nil, 0.5}),
			want: "bad.parquet: row 17: weights[0] is null"},
		{name: "null first hit element", rows: set(17, "hit", []any{nil, true}),
			want: "bad.parquet: row 17: hit[0] is null"},
		{name: "null first lookahead element", rows: set(5, "lookahead_1", []any{nil, 2, 3, 4, 5, 6, 7, 8}),
			want: "bad.parquet: row 5: lookahead_1[0] is null"},
		{name: "top_k edited above the rows'", meta: func(m *Meta) { m.Model.TopK = 3 },
			want: "bad.parquet: row 0: 2 experts selected, the model (io-test) routes each token to 3 (and 3 more problems in token (seq 0, pos 0))"},
		{name: "null seq", rows: set(1, "seq", nil),
			sc:   withField(colSeq, arrow.Field{Name: colSeq, Type: arrow.PrimitiveTypes.Int32, Nullable: true}),
			want: "bad.parquet: row 1: seq is null"},
		{name: "wider integer columns are fine but checked", rows: set(1, "seq", int64(1)<<40),
			sc:   withField(colSeq, arrow.Field{Name: colSeq, Type: arrow.PrimitiveTypes.Int64}),
			want: "bad.parquet: row 1: seq 1099511627776 out of range [0,2147483647]"},
		{name: "wrong column types",
			sc: func() *arrow.Schema {
				sc := withField(colExperts, arrow.Field{Name: colExperts, Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)})()
				fields := sc.Fields()
				fields[sc.FieldIndices(colPos)[0]] = arrow.Field{Name: colPos, Type: arrow.BinaryTypes.String}
				return arrow.NewSchema(fields, nil)
			},
			rows: func(r ioRows) ioRows {
				for _, row := range r {
					row["pos"] = "x"
				}
				return r
			},
			want: "bad.parquet: not a lessim trace schema: column pos has type utf8, want an integer; column experts has type list<element: int64, nullable>, want a list of int32"},
		{name: "missing column",
			sc: func() *arrow.Schema {
				sc := pqSchema(&meta)
				i := sc.FieldIndices(colComputeNS)[0]
				fields := slices.Delete(sc.Fields(), i, i+1)
				return arrow.NewSchema(fields, nil)
			},
			want: "bad.parquet: not a lessim trace schema: column compute_ns missing"},
		{name: "missing meta", kv: func(kv map[string]*string) { kv[MetaKey] = nil },
			want: "bad.parquet: missing lessim.trace.meta metadata (not a lessim trace?)"},
		{name: "missing version", kv: func(kv map[string]*string) { kv[VersionKey] = nil },
			want: "bad.parquet: missing lessim.trace.version metadata"},
		{name: "future version", kv: func(kv map[string]*string) { kv[VersionKey] = ioStr("2") },
			want: `bad.parquet: trace format version "2" not supported (this lessim reads version 1)`},
		{name: "garbled meta", kv: func(kv map[string]*string) { kv[MetaKey] = ioStr(`{"model": {"experts": 8,`) },
			want: "bad.parquet: bad lessim.trace.meta metadata: unexpected end of JSON input"},
		{name: "meta of the wrong shape", kv: func(kv map[string]*string) { kv[MetaKey] = ioStr(`{"model": {"experts": "eight"}}`) },
			want: "bad.parquet: bad lessim.trace.meta metadata: model.experts: want a whole number, got a string"},
		{name: "invalid meta", meta: func(m *Meta) { m.Model.Experts = 0; m.LookaheadDepth = 7 },
			want: "bad.parquet: lessim.trace.meta: model.experts: 0 is outside [1, 4096] experts, whole: routed experts per layer: 8 (Mixtral) to 512 (Qwen3-Next) in released models; 4096 leaves room for finer-grained research models\n" +
				"bad.parquet: lessim.trace.meta: lookahead_depth: 7 out of range [0,3] (depth d scores MoE layer i+d)"},
		{name: "meta with fewer layers than the rows", meta: func(m *Meta) { m.Model.Layers = m.Model.Layers[:3]; m.LookaheadDepth = 1 },
			want: "bad.parquet: row 2: lookahead depth 1 scores layer 3, past the last MoE layer 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := ioGoodRows(6)
			if c.rows != nil {
				rows = c.rows(rows)
			}
			var sc *arrow.Schema
			if c.sc != nil {
				sc = c.sc()
			}
			stored := meta
			if c.meta != nil {
				stored.Model.Layers = slices.Clone(meta.Model.Layers)
				c.meta(&stored)
			}
			kv := ioKV(t, stored)
			if c.kv != nil {
				c.kv(kv)
			}
			data := ioRawFile(t, meta, sc, rows, kv)
			_, _, err := ioRead(data, "bad.parquet", 5) // small batches: errors must count rows across them
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if err.Error() != c.want {
				t.Fatalf("error\n got %q\nwant %q", err, c.want)
			}
		})
	}
}

// TestReaderNullFirstElementAlone checks that a null first element is found
// in a column read without a partner to disagree with: experts when the
// weights are skipped (a streamed run) and the trace has no hit flags.
// Without the level count arrow-go reads row 10 as one expert, the null
// dropped; here that expert is the placeholder value arrow-go's writer
// stores for the null and every later value shifts by one, so the error
// would surface rows later as an unrelated one (another writer's file,
// without the placeholder, would read as a valid step).
func TestReaderNullFirstElementAlone(t *testing.T) {
	meta := ioTestMeta(ioBadShape)
	rows := ioGoodRows(6)
	for _, r := range rows {
		delete(r, "hit")
	}
	rows[10]["experts"] = []any{nil, 1}
	sc := pqSchema(&meta)
	i := sc.FieldIndices(colHit)[0]
	sc = arrow.NewSchema(slices.Delete(sc.Fields(), i, i+1), nil)
	data := ioRawFile(t, meta, sc, rows, ioKV(t, meta))
	for _, batch := range []int64{0, 5} {
		r, err := newReaderCols(pqNoCloseRA{bytes.NewReader(data)}, "bad.parquet", batch, Columns{NoWeights: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadAll(r)
		r.Close()
		if want := "bad.parquet: row 10: experts[0] is null"; err == nil || err.Error() != want {
			t.Fatalf("batch %d rows: error %v, want %q", batch, err, want)
		}
	}
}

// TestReaderGoodRaw checks that the raw-file helper itself makes a readable
// trace, so the error cases above each differ from a valid file by one edit.
func TestReaderGoodRaw(t *testing.T) {
	meta := ioTestMeta(ioBadShape)
	data := ioRawFile(t, meta, nil, ioGoodRows(6), ioKV(t, meta))
	_, steps, err := ioRead(data, "good.parquet", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 6 {
		t.Fatalf("%d steps, want 6", len(steps))
	}
	ls := steps[5].Layers[2]
	if !slices.Equal(ls.Experts, []int32{22 % 8, 23 % 8}) || len(ls.Lookahead) != 1 || steps[5].Layers[3].Lookahead != nil {
		t.Fatalf("step 5 layer 2 = %+v", ls)
	}
}

// TestNotParquet checks the errors for files that are not Parquet at all or
// are cut short.
func TestNotParquet(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, depth: 1, logits: true})
	good := ioWrite(t, m, ioTestSteps(rand.New(rand.NewPCG(7, 7)), m, 30, false), 0)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "x.parquet: truncated Parquet file (0 bytes)"},
		{"text", []byte("seq,pos,layer\n0,0,0\n"), "x.parquet: not a Parquet file"},
		{"short text", []byte("PK"), "x.parquet: not a Parquet file"},
		{"magic only", []byte("PAR1"), "x.parquet: truncated Parquet file (4 bytes)"},
		{"cut in half", good[:len(good)/2], "x.parquet: truncated Parquet file (no footer; was it closed?)"},
		{"last byte cut", good[:len(good)-1], "x.parquet: truncated Parquet file (no footer; was it closed?)"},
		{"footer length too large", ioPatchFooterLen(good, 1<<30), "x.parquet: truncated Parquet file (footer of 1073741824 bytes in a"},
		{"zeroed footer", ioZeroFooter(good), "x.parquet: corrupt Parquet footer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ioRead(c.data, "x.parquet", 0)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want prefix %q", err, c.want)
			}
		})
	}
}

func ioPatchFooterLen(b []byte, n uint32) []byte {
	b = slices.Clone(b)
	i := len(b) - 8
	b[i], b[i+1], b[i+2], b[i+3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return b
}

// ioZeroFooter zeroes the Thrift footer but keeps its length and the magic.
func ioZeroFooter(b []byte) []byte {
	b = slices.Clone(b)
	n := int(b[len(b)-8]) | int(b[len(b)-7])<<8 | int(b[len(b)-6])<<16 | int(b[len(b)-5])<<24
	clear(b[len(b)-8-n : len(b)-8])
	return b
}

// TestReaderReuse checks the Scanner contract: Step's slices are reused
// between calls to Next (so copying is the caller's job) and the values seen
// at each step are right.
func TestReaderReuse(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, depth: 1, logits: true})
	want := ioTestSteps(rand.New(rand.NewPCG(8, 8)), m, 20, false)
	data := ioWrite(t, m, want, 0)
	r, err := NewReader(bytes.NewReader(data), "reuse.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var first *int32
	for i := 0; r.Next(); i++ {
		s := r.Step()
		if d := ioDiff([]Step{*s}, want[i:i+1]); d != "" {
			t.Fatalf("step %d: %s", i, d)
		}
		if i == 0 {
			first = &s.Layers[0].Experts[0]
		} else if &s.Layers[0].Experts[0] != first {
			t.Fatalf("step %d: experts buffer reallocated", i)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Next() {
		t.Error("Next after the end returned true")
	}
}

// TestEncodings checks the column encodings promised in docs/trace-format.md:
// zstd everywhere, BYTE_STREAM_SPLIT for the float vectors.
func TestEncodings(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, hidden: 4, depth: 1, logits: true, routerInputs: true})
	data := ioWrite(t, m, ioTestSteps(rand.New(rand.NewPCG(9, 9)), m, 10, true), 0)
	r, err := NewReader(bytes.NewReader(data), "enc.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rg := r.pf.MetaData().RowGroup(0)
	floats := map[string]bool{"weights.list.element": true, "logits.list.element": true, "lookahead_1.list.element": true, "router_input.list.element": true}
	seen := 0
	for i := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		path := cc.PathInSchema().String()
		if cc.Compression() != compress.Codecs.Zstd {
			t.Errorf("%s: compression %v, want zstd", path, cc.Compression())
		}
		if floats[path] {
			seen++
			if !slices.Contains(cc.Encodings(), parquet.Encodings.ByteStreamSplit) {
				t.Errorf("%s: encodings %v, want BYTE_STREAM_SPLIT", path, cc.Encodings())
			}
		}
	}
	if seen != len(floats) {
		t.Errorf("found %d of %d float columns", seen, len(floats))
	}
}

// TestReaderArrowPanics reads files (found by FuzzReader) on which arrow-go
// v18.8.0 panics, once while parsing the footer and once while decoding a
// page: the reader's last-resort guard must turn both into errors.
func TestReaderArrowPanics(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"io-corrupt-footer.parquet", "io-corrupt-footer.parquet: corrupt Parquet file: unreadable data"},
		{"io-corrupt-page.parquet", "near row 0: corrupt Parquet data (the Parquet reader failed on it)"},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = ioRead(data, c.file, 4)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestReaderCloseMidway: closing a reader before its end stops its
// read-ahead goroutine (no goroutine is left per reader) and releases the
// batches it decoded; Next after Close reports no step.
func TestReaderCloseMidway(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 4, experts: 16, topK: 2, hidden: 4, depth: 1})
	data := ioWrite(t, m, ioTestSteps(rand.New(rand.NewPCG(5, 5)), m, 300, false), 0)
	before := runtime.NumGoroutine()
	for range 20 {
		r, err := newReader(bytes.NewReader(data), "mid.parquet", 64) // many batches
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if !r.Next() {
				t.Fatalf("no step: %v", r.Err())
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if r.Next() {
			t.Fatal("Next after Close read a step")
		}
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("%d goroutines after closing 20 readers midway, %d before", after, before)
	}
}

// TestReaderDecodesOnDemand: a reader opened for its Meta and row count alone
// (as the memory checks do before every run) starts no decoding; the first
// Next does.
func TestReaderDecodesOnDemand(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 4, experts: 16, topK: 2, hidden: 4, depth: 1})
	data := ioWrite(t, m, ioTestSteps(rand.New(rand.NewPCG(5, 6)), m, 50, false), 0)
	r, err := newReader(bytes.NewReader(data), "meta.parquet", 16)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumSteps() != 50 || r.ahead != nil {
		t.Fatalf("after open: %d steps, read-ahead started %v", r.NumSteps(), r.ahead != nil)
	}
	if !r.Next() || r.ahead == nil {
		t.Fatalf("first Next: %v, read-ahead started %v", r.Err(), r.ahead != nil)
	}
}

// TestReaderMetaStrict: the metadata JSON is decoded strictly (an unknown
// key, a key given twice) and its model spec checked against the model
// bounds when the file is opened, every problem at once, each line naming the
// file. The edits are those a corrupted byte or a careless rewrite makes.
func TestReaderMetaStrict(t *testing.T) {
	meta := ioTestMeta(ioBadShape)
	js := mustJSON(t, meta)
	pre := "bad.parquet: lessim.trace.meta: "
	for _, c := range []struct {
		name, old, new string
		want           []string // lines of the error, each after pre
	}{
		{"unknown key", `"dense_bytes":0`, `"dense_bytez":0`, nil},
		{"duplicate key", `"top_k":2`, `"top_k":2,"top_k":1`, nil},
		{"duplicate nested key", `"block":2,`, `"block":2,"block":7,`, nil},
		{"top_k 0", `"top_k":2`, `"top_k":0`, []string{"model.top_k: 0 is outside [1, 64] experts"}},
		{"every problem at once", `"blocks":5,"experts":8,"top_k":2,"shared_experts":0,"hidden":0`,
			`"blocks":0,"experts":8,"top_k":2,"shared_experts":0,"hidden":-1`,
			[]string{"model.blocks: 0 is outside [1, 1024] blocks", "model.hidden: -1 is outside [1, 65536]"}},
		{"layer sizes", `{"block":1,"expert_bytes":1024,"dense_bytes":0,"dense_flops_per_token":0`,
			`{"block":1,"expert_bytes":0,"dense_bytes":0,"dense_flops_per_token":-5`,
			[]string{"model.layers[0].expert_bytes: 0 B is outside [16 B, 4 GiB]", "model.layers[0].dense_flops_per_token: -5 is outside [0, 1e12] FLOP"}},
		{"blocks out of order", `{"block":2,`, `{"block":1,`, []string{"model.layers[1].block: must be greater than the previous layer's block 1 (got 1)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			edited := strings.Replace(js, c.old, c.new, 1)
			if edited == js {
				t.Fatalf("%q not in %s", c.old, js)
			}
			kv := ioKV(t, meta)
			kv[MetaKey] = ioStr(edited)
			_, _, err := ioRead(ioRawFile(t, meta, nil, ioGoodRows(2), kv), "bad.parquet", 5)
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			switch {
			case c.want == nil && c.name == "unknown key":
				if err.Error() != `bad.parquet: bad lessim.trace.meta metadata: json: unknown field "dense_bytez"` {
					t.Errorf("error %q", err)
				}
			case c.want == nil:
				if len(lines) != 1 || !strings.HasPrefix(err.Error(), "bad.parquet: bad lessim.trace.meta metadata: line 1: duplicate key model.") {
					t.Errorf("error %q", err)
				}
			default:
				for _, w := range c.want {
					if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, pre+w) }) {
						t.Errorf("error\n%v\nlacks a line starting %q", err, pre+w)
					}
				}
				for _, l := range lines {
					if !strings.HasPrefix(l, pre) {
						t.Errorf("line %q does not start with %q", l, pre)
					}
				}
			}
		})
	}
}
