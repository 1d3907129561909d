package gguf

import (
	"bytes"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	ogguf "github.com/ollama/ollama/fs/gguf"
)

// TestOllamaReadsSynthetic checks the writer against an independent GGUF reader,
// ollama's fs/gguf: same keys and values in the same order, same tensor names,
// shapes, types and offsets, and the same tensor bytes.
func TestOllamaReadsSynthetic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := SynthMoE(path, tinyOptions()); err != nil {
		t.Fatal(err)
	}
	mine, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	theirs, err := ogguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()

	if theirs.NumKeyValues() != len(mine.KVs) || theirs.NumTensors() != len(mine.Tensors) {
		t.Fatalf("ollama sees %d KVs and %d tensors, we wrote %d and %d", theirs.NumKeyValues(), theirs.NumTensors(), len(mine.KVs), len(mine.Tensors))
	}
	for i, kv := range theirs.KeyValues() {
		want := mine.KVs[i]
		if kv.Key != want.Key {
			t.Errorf("KV %d: ollama key %q, ours %q", i, kv.Key, want.Key)
			continue
		}
		var got, exp any
		switch v := want.Value.(type) {
		case string:
			got, exp = kv.String(), v
		case uint32:
			got, exp = kv.Uint(), uint64(v)
		case uint64:
			got, exp = kv.Uint(), v
		case float32:
			got, exp = kv.Float(), float64(v)
		case bool:
			got, exp = kv.Bool(), v
		case Array:
			switch a := v.Values.(type) {
			case []string:
				got, exp = kv.Strings(), a
			case []float32:
				fs := make([]float64, len(a))
				for j, x := range a {
					fs[j] = float64(x)
				}
				got, exp = kv.Floats(), fs
			case []int32:
				is := make([]int64, len(a))
				for j, x := range a {
					is[j] = int64(x)
				}
				got, exp = kv.Ints(), is
			}
		}
		if exp == nil || !reflect.DeepEqual(got, exp) {
			t.Errorf("KV %s: ollama reads %v, we wrote %v (%T)", kv.Key, got, exp, want.Value)
		}
	}
	for i, ti := range theirs.TensorInfos() {
		want := mine.Tensors[i]
		dims := make([]int64, len(ti.Shape))
		for j, d := range ti.Shape {
			dims[j] = int64(d)
		}
		if ti.Name != want.Name || uint32(ti.Type) != uint32(want.Type) || !reflect.DeepEqual(dims, want.Dims) ||
			int64(ti.Offset) != want.Offset || ti.NumBytes() != want.Bytes {
			t.Errorf("tensor %d: ollama %s %v type %d offset %d %d bytes; ours %+v", i, ti.Name, ti.Shape, ti.Type, ti.Offset, ti.NumBytes(), want)
			continue
		}
		_, r, err := theirs.TensorReader(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := mine.ReadTensorBytes(ti.Name)
		if err != nil || !bytes.Equal(data, ours) {
			t.Errorf("tensor %s: bytes differ (%v)", ti.Name, err)
		}
	}
}
