package gguf

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

// TestInspectGolden compares `model inspect` output for the tiny synthetic model
// (tinyOptions, two experts listed) with testdata/tiny_inspect.{txt,json}; regenerate
// with -rewrite and read the diff.
func TestInspectGolden(t *testing.T) {
	f, err := parseBytes(synthBytes(t, tinyOptions()), "tiny.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := f.WriteInspect(&txt, 2); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteInspectJSON(&js, 2); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"tiny_inspect.txt": txt.Bytes(), "tiny_inspect.json": js.Bytes()} {
		path := filepath.Join("testdata", name)
		if *rewrite {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -rewrite)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (run with -rewrite and read the diff):\n%s", name, got)
		}
	}
	var back Inspection
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Layers) != 2 || len(back.Layers[1].Experts) != 2 || back.Layers[1].Omitted != 6 || back.MoE.Experts != 8 {
		t.Errorf("JSON inspection: %+v", back.Layers)
	}
	// maxExperts ≤ 0 lists every expert.
	all := f.Inspect(0)
	if len(all.Layers[0].Experts) != 8 || all.Layers[0].Omitted != 0 {
		t.Errorf("Inspect(0) lists %d experts", len(all.Layers[0].Experts))
	}
	if r := all.Layers[0].Experts[7]; r[2].End != f.Tensors[f.tensorIndex["blk.0.ffn_down_exps.weight"]].End() {
		t.Errorf("last expert's down region %v does not end the tensor", r)
	}
}
