package traces

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// ioProject is steps with the vectors cols skips set to nil.
func ioProject(steps []Step, cols Columns) []Step {
	out := make([]Step, len(steps))
	for i, s := range steps {
		out[i] = s
		out[i].Layers = append([]LayerStep(nil), s.Layers...)
		for l := range out[i].Layers {
			ls := &out[i].Layers[l]
			if cols.NoLogits {
				ls.Logits = nil
			}
			if cols.NoRouterInputs {
				ls.RouterInput = nil
			}
			if cols.NoLookahead {
				ls.Lookahead = nil
			}
		}
	}
	return out
}

// TestReadColumns reads a trace with every optional column under each
// projection: the kept columns read exactly as written, the skipped ones are
// nil, and Meta still describes the file.
func TestReadColumns(t *testing.T) {
	m := ioTestMeta(ioShape{layers: 4, experts: 16, topK: 2, hidden: 8, depth: 2, logits: true, routerInputs: true})
	steps := ioTestSteps(rand.New(rand.NewPCG(3, 4)), m, 120, true)
	data := ioWrite(t, m, steps, 0)
	path := filepath.Join(t.TempDir(), "cols.parquet")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cols := range []Columns{
		{},
		{NoLogits: true},
		{NoRouterInputs: true},
		{NoLookahead: true},
		{NoLogits: true, NoRouterInputs: true, NoLookahead: true},
	} {
		for _, open := range []func() (*Reader, error){
			func() (*Reader, error) { return OpenColumns(path, cols) },
			func() (*Reader, error) { return NewReaderColumns(bytes.NewReader(data), "cols.parquet", cols) },
		} {
			r, err := open()
			if err != nil {
				t.Fatalf("%+v: %v", cols, err)
			}
			got, err := ReadAll(r)
			if err != nil {
				t.Fatalf("%+v: %v", cols, err)
			}
			if d := ioDiff(got, ioProject(steps, cols)); d != "" {
				t.Errorf("%+v: %s", cols, d)
			}
			if g := r.Meta(); g.LookaheadDepth != 2 || !g.HasLogits || !g.HasRouterInputs {
				t.Errorf("%+v: Meta changed by the projection: %+v", cols, g)
			}
			var logits, look int
			for i := range got {
				for _, ls := range got[i].Layers {
					logits += len(ls.Logits) + len(ls.RouterInput)
					look += len(ls.Lookahead)
				}
			}
			if cols.NoLogits && cols.NoRouterInputs && logits != 0 || cols.NoLookahead && look != 0 {
				t.Errorf("%+v: skipped vectors read (%d logit/input values, %d lookahead vectors)", cols, logits, look)
			}
			if !cols.NoLookahead && look == 0 {
				t.Errorf("%+v: no lookahead read", cols)
			}
			r.Close()
		}
	}
}
