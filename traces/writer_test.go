package traces

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoundTrip writes steps with every combination of optional columns and
// reads them back bit-identical, including nulls (nil weights, logits, router
// inputs, lookahead depths) and steps straddling record batches and row groups.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		shape     ioShape
		steps     int
		hit       bool
		groupRows int64 // 0 = default sizing
		batchRows int64 // 0 = default sizing
	}{
		{name: "minimal", shape: ioShape{layers: 3, experts: 8, topK: 2}, steps: 20},
		{name: "every column", shape: ioShape{layers: 5, experts: 16, topK: 4, hidden: 12, depth: 2, logits: true, routerInputs: true}, steps: 60, hit: true},
		{name: "depth equals layers-1", shape: ioShape{layers: 4, experts: 6, topK: 6, depth: 3}, steps: 10},
		{name: "one layer", shape: ioShape{layers: 1, experts: 4, topK: 1, logits: true}, steps: 7},
		{name: "wide model", shape: ioShape{layers: 3, experts: 512, topK: 16, hidden: 64, depth: 1, logits: true, routerInputs: true}, steps: 12, hit: true},
		{name: "straddling batches and row groups", shape: ioShape{layers: 7, experts: 32, topK: 8, hidden: 8, depth: 2, logits: true, routerInputs: true}, steps: 90, hit: true, groupRows: 100, batchRows: 64},
		{name: "empty trace", shape: ioShape{layers: 2, experts: 4, topK: 2, depth: 1}, steps: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := ioTestMeta(tc.shape)
			want := ioTestSteps(rand.New(rand.NewPCG(1, uint64(tc.steps))), m, tc.steps, tc.hit)
			data := ioWrite(t, m, want, tc.groupRows)
			gotMeta, got, err := ioRead(data, "rt.parquet", tc.batchRows)
			if err != nil {
				t.Fatal(err)
			}
			if d := ioDiff(got, want); d != "" {
				t.Fatal(d)
			}
			gm, wm := mustJSON(t, gotMeta), mustJSON(t, m)
			if gm != wm {
				t.Fatalf("meta:\n got %s\nwant %s", gm, wm)
			}
		})
	}
}

func mustJSON(t *testing.T, m Meta) string {
	t.Helper()
	s, err := pqMetaJSON(&m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRowGroups checks that the writer's row-group sizing holds on disk: a
// trace larger than one group is split between tokens, never inside one, and
// the reader's step count agrees.
func TestRowGroups(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 5, experts: 8, topK: 2})
	steps := ioTestSteps(rand.New(rand.NewPCG(2, 2)), m, 61, false)
	data := ioWrite(t, m, steps, 48)
	r, err := NewReader(bytes.NewReader(data), "rg.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// 61 steps × 5 layers = 305 rows in groups of at most 48 whole tokens'
	// rows: 6 groups of 45 rows (9 steps) and one of 35.
	if got := r.pf.NumRowGroups(); got != 7 {
		t.Errorf("%d row groups, want 7", got)
	}
	for i := range r.pf.NumRowGroups() {
		want := int64(45)
		if i == 6 {
			want = 35
		}
		if got := r.pf.MetaData().RowGroup(i).NumRows(); got != want {
			t.Errorf("row group %d has %d rows, want %d", i, got, want)
		}
	}
	if got := r.NumSteps(); got != 61 {
		t.Errorf("NumSteps %d, want 61", got)
	}
}

// TestDeterministic writes the same steps twice and expects identical bytes.
func TestDeterministic(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 4, experts: 16, topK: 4, hidden: 8, depth: 2, logits: true, routerInputs: true})
	steps := ioTestSteps(rand.New(rand.NewPCG(3, 3)), m, 40, true)
	a := ioWrite(t, m, steps, 0)
	b := ioWrite(t, m, steps, 0)
	if !bytes.Equal(a, b) {
		t.Fatalf("two writes of the same steps differ (%d vs %d bytes)", len(a), len(b))
	}
}

// TestCreateOpen goes through the file-path API and checks Close closes the
// file (a second Close is harmless).
func TestCreateOpen(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, depth: 1})
	want := ioTestSteps(rand.New(rand.NewPCG(4, 4)), m, 15, false)
	path := filepath.Join(t.TempDir(), "trace.parquet")
	w, err := Create(path, m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if err := w.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Write(&want[0]); err == nil {
		t.Error("Write after Close succeeded")
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if d := ioDiff(got, want); d != "" {
		t.Fatal(d)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v, want ErrNotExist", err)
	}
}

// TestOpenErrorClosesOnce: a file Open refuses after reading its footer is
// closed once, and the error is the reason alone (no "close FILE: file
// already closed" beside it); Close of an opened trace also closes once.
func TestOpenErrorClosesOnce(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 2, experts: 4, topK: 1})
	data := ioWrite(t, m, ioTestSteps(rand.New(rand.NewPCG(4, 5)), m, 4, false), 0)
	bad := bytes.Replace(data, []byte(`"has_logits":false`), []byte(`"has_logits":true `), 1)
	dir := t.TempDir()
	for _, c := range []struct {
		file string
		data []byte
		want string // "" = opens
	}{
		{"good.parquet", data, ""},
		{"logits.parquet", bad, "column logits missing"},
		{"text.parquet", []byte("not parquet at all"), "not a Parquet file"},
	} {
		path := filepath.Join(dir, c.file)
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func() (*Reader, error){
			func() (*Reader, error) { return Open(path) },
			func() (*Reader, error) { return OpenColumns(path, Columns{NoWeights: true}) },
		} {
			r, err := open()
			if c.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", c.file, err)
				}
				if err := r.Close(); err != nil {
					t.Fatalf("%s: Close: %v", c.file, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "close") || strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("%s: error %q, want one line with %q", c.file, err, c.want)
			}
		}
	}
}

// TestNewWriterDoesNotClose checks that Close leaves the caller's writer open.
func TestNewWriterDoesNotClose(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 2, experts: 4, topK: 1})
	cw := &ioCloseSpy{}
	w, err := NewWriter(cw, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if cw.closed {
		t.Error("Writer.Close closed the io.Writer given to NewWriter")
	}
	if cw.Len() == 0 {
		t.Error("nothing written")
	}
}

type ioCloseSpy struct {
	bytes.Buffer
	closed bool
}

func (c *ioCloseSpy) Close() error { c.closed = true; return nil }

// TestWriterRejects checks that Write refuses invalid steps with every
// problem named, writes nothing for them, and stays usable.
func TestWriterRejects(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, depth: 1})
	good := ioTestSteps(rand.New(rand.NewPCG(5, 5)), m, 2, false)
	bad := CloneStep(&good[0])
	bad.Layers[0].Experts = []int32{3, 300}
	bad.Layers[1].Experts = []int32{5, 5}
	bad.Layers[2].Logits = make([]float32, 8)

	var buf bytes.Buffer
	w, err := NewWriter(&buf, m)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Write(&bad)
	var se *StepError
	if !errors.As(err, &se) {
		t.Fatalf("Write(bad) = %v, want a *StepError", err)
	}
	for _, want := range []string{
		"layer 0: expert 300 out of range [0,8)",
		"layer 1: expert 5 selected twice",
		"layer 2: has logits but the trace meta says has_logits false",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for i := range good {
		if err := w.Write(&good[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, got, err := ioRead(buf.Bytes(), "w.parquet", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := ioDiff(got, good); d != "" {
		t.Fatal(d)
	}
}

// TestValidateImpossibleValues: a NaN or infinite lookahead score, and a
// decode token routing fewer experts than the meta's top_k (an edited
// top_k), are refused, by the writer and the reader alike (both Validate).
func TestValidateImpossibleValues(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, depth: 1})
	steps := ioTestSteps(rand.New(rand.NewPCG(5, 5)), m, 20, false)
	good := steps[len(steps)-1]
	if good.Phase != Decode || len(good.Layers[1].Lookahead) != 1 {
		t.Fatalf("fixture: phase %v, lookahead %v", good.Phase, good.Layers[1].Lookahead)
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		s := CloneStep(&good)
		s.Layers[1].Lookahead[0][3] = v
		var se *StepError
		if err := Validate(m, &s); !errors.As(err, &se) || len(se.Problems) != 1 || se.Problems[0].Layer != 1 {
			t.Errorf("lookahead score %g: got %v, want one problem at layer 1", v, err)
		}
	}
	edited := m
	edited.Model.TopK = 3
	var se *StepError
	if err := Validate(edited, &good); !errors.As(err, &se) || len(se.Problems) != 3 {
		t.Errorf("top_k edited to 3 over rows of 2: got %v, want a problem per layer", err)
	}
	if err := Validate(m, &good); err != nil {
		t.Errorf("the unedited step: %v", err)
	}
}

// TestWriterBadMeta checks that meta problems are all reported at creation.
func TestWriterBadMeta(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 0, topK: 2, depth: 3, routerInputs: true})
	_, err := NewWriter(&bytes.Buffer{}, m)
	if err == nil {
		t.Fatal("NewWriter accepted an invalid meta")
	}
	for _, want := range []string{"lessim.trace.meta: model.experts: 0 is outside [1, 4096]", "lessim.trace.meta: lookahead_depth: 3 out of range [0,2]", "lessim.trace.meta: has_router_inputs: needs model.hidden"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "x.parquet")
	if _, err := Create(path, m); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("Create error %v, want it prefixed with the path", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("Create with a bad meta left a file behind")
	}
}

// ioFailWriter fails every write after the first n bytes.
type ioFailWriter struct{ n int }

func (f *ioFailWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriterIOError checks that a failing sink surfaces from Write or Close
// and that the error sticks.
func TestWriterIOError(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2})
	steps := ioTestSteps(rand.New(rand.NewPCG(6, 6)), m, 30, false)
	w, err := NewWriter(&ioFailWriter{n: 10}, m)
	if err != nil {
		t.Fatal(err)
	}
	w.groupSz = 9
	var first error
	for i := range steps {
		if err := w.Write(&steps[i]); err != nil {
			first = err
			break
		}
	}
	if err := w.Close(); first == nil {
		first = err
	}
	if first == nil || !strings.Contains(first.Error(), "disk full") {
		t.Fatalf("error %v, want disk full", first)
	}
}
