package gguf

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// raw builds GGUF bytes by hand, including invalid ones.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) header(version uint32, tensors, kvs uint64) *raw {
	r.WriteString("GGUF")
	return r.u32(version).u64(tensors).u64(kvs)
}

// TestParseErrors feeds corrupt files to Parse: each must fail with a message that
// names the file and the problem (and never panic or allocate by a corrupt length).
func TestParseErrors(t *testing.T) {
	tiny := synthBytes(t, tinyOptions())
	tensorInfo := func(name string, dims []uint64, typ uint32, off uint64) *raw {
		r := (&raw{}).header(3, 1, 0)
		r.str(name).u32(uint32(len(dims)))
		for _, d := range dims {
			r.u64(d)
		}
		return r.u32(typ).u64(off)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"zip", []byte("PK\x03\x04rest of a zip"), `x.gguf: not a GGUF file (magic "PK\x03\x04")`},
		{"empty", nil, "x.gguf: not a GGUF file (0 bytes)"},
		{"version 1", (&raw{}).header(1, 0, 0).Bytes(), "x.gguf: unsupported GGUF version 1 (supported: 2, 3)"},
		{"version 4", (&raw{}).header(4, 0, 0).Bytes(), "unsupported GGUF version 4"},
		{"big-endian", (&raw{}).header(3<<24, 0, 0).Bytes(), "big-endian GGUF (version 3) is not supported"},
		{"header cut", []byte("GGUF\x03\x00\x00\x00\x00"), "x.gguf: truncated: tensor count at byte 8 needs 8 bytes, file has 9"},
		{"huge kv count", (&raw{}).header(3, 0, 1<<62).Bytes(), "x.gguf: truncated or corrupt: metadata count 4611686018427387904 at byte 24"},
		{"huge tensor count", (&raw{}).header(3, 1<<40, 0).Bytes(), "truncated or corrupt: tensor count 1099511627776"},
		{"huge key length", append((&raw{}).header(3, 0, 1).u64(1<<60).Bytes(), make([]byte, 16)...), "truncated or corrupt: length 1152921504606846976 of metadata key"},
		{"huge string value", (&raw{}).header(3, 0, 1).str("k").u32(uint32(TypeString)).u64(1 << 50).Bytes(), "truncated or corrupt: length 1125899906842624 of value of k"},
		{"huge array", (&raw{}).header(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint32)).u64(1 << 61).Bytes(), "truncated or corrupt: array length of k 2305843009213693952"},
		{"huge string array", (&raw{}).header(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(3).u64(1 << 40).Bytes(), "truncated or corrupt: array length of k 3"},
		{"array string cut", (&raw{}).header(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1).u64(1 << 40).u64(0).u64(0).u64(0).Bytes(), "truncated or corrupt: length 1099511627776 of value of k"},
		{"unknown value type", (&raw{}).header(3, 0, 1).str("k").u32(13).Bytes(), "k: unknown value type 13"},
		{"unknown element type", (&raw{}).header(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(99).u64(1).Bytes(), "k: unknown array element type 99"},
		{"bad bool", (&raw{}).header(3, 0, 1).str("b").u32(uint32(TypeBool)).u32(2).Bytes()[:40], "b: bool byte 2"},
		{"bad alignment", (&raw{}).header(3, 0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(3).Bytes(), "general.alignment must be a power-of-two uint32, got 3"},
		{"alignment type", (&raw{}).header(3, 0, 1).str("general.alignment").u32(uint32(TypeUint64)).u64(32).Bytes(), "general.alignment must be a power-of-two uint32, got 32 (uint64)"},
		{"five dims", tensorInfo("t", []uint64{1, 1, 1, 1, 1}, 0, 0).Bytes(), "tensor t: 5 dimensions (want 1 to 4)"},
		{"zero dim", tensorInfo("t", []uint64{0}, 0, 0).Bytes(), "tensor t: dimension 0 is 0"},
		{"unknown type", tensorInfo("blk.0.ffn_up_exps.weight", []uint64{32}, 4, 0).Bytes(), "tensor blk.0.ffn_up_exps.weight: unknown ggml type id 4"},
		{"partial block", tensorInfo("t", []uint64{16}, uint32(TypeQ8_0), 0).Bytes(), "tensor t: first dimension 16 is not a multiple of the Q8_0 block size 32"},
		{"misaligned", tensorInfo("t", []uint64{1}, 0, 4).Bytes(), "tensor t: offset 4 is not a multiple of the alignment 32"},
		{"dims overflow", tensorInfo("t", []uint64{1 << 40, 1 << 40}, 0, 0).Bytes(), "tensor t: dimensions [1099511627776 1099511627776] overflow"},
		{"tensor data missing", tensorInfo("blk.3.ffn_up_exps.weight", []uint64{8}, 0, 0).Bytes(), "x.gguf: truncated: tensor blk.3.ffn_up_exps.weight ends at byte 128, file has 80"},
		{"cut synthetic file", tiny[:len(tiny)/2], "x.gguf: truncated: tensor "},
		{"cut synthetic header", tiny[:3000], "x.gguf: truncated or corrupt: length 6 of value of tokenizer.ggml.tokens at byte 2989, 3 bytes left"},
		{"cut synthetic key", tiny[:500], "x.gguf: truncated or corrupt: tensor count 27 at byte 24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseBytes(tt.data, "x.gguf")
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseDuplicates(t *testing.T) {
	dupKey := (&raw{}).header(3, 0, 2)
	dupKey.str("k").u32(uint32(TypeUint32)).u32(1).str("k").u32(uint32(TypeUint32)).u32(2)
	dupTensor := (&raw{}).header(3, 2, 0)
	dupTensor.str("t").u32(1).u64(1).u32(0).u64(0).str("t").u32(1).u64(1).u32(0).u64(32)
	overlap := (&raw{}).header(3, 2, 0)
	overlap.str("a").u32(1).u64(16).u32(0).u64(0).str("b").u32(1).u64(1).u32(0).u64(32)
	overlap.Write(make([]byte, 256))
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"key", dupKey.Bytes(), `duplicate metadata key "k"`},
		{"tensor", dupTensor.Bytes(), `duplicate tensor "t"`},
		{"overlap", overlap.Bytes(), "tensor b (bytes"},
	} {
		_, err := parseBytes(tt.data, "d.gguf")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil || !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	errgolden.Check(t, "is-a-directory", errgolden.Err(Open(dir)))
	zip := writeTemp(t, "model.gguf", []byte("PK\x03\x04\x14\x00"))
	if _, err := Open(zip); err == nil || err.Error() != zip+`: not a GGUF file (magic "PK\x03\x04")` {
		t.Errorf("zip: %v", err)
	}
}

// TestDenseModel: a file without expert tensors has no MoE view.
func TestDenseModel(t *testing.T) {
	w := NewWriter()
	must(t, w.AddKV("general.architecture", "llama"))
	must(t, w.AddKV("llama.block_count", uint32(1)))
	must(t, w.AddTensor("blk.0.ffn_up.weight", TypeF32, []int64{4, 2}, make([]byte, 32)))
	must(t, w.AddTensor("blk.0.ffn_norm.weight", TypeF32, []int64{4}, make([]byte, 16)))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := parseBytes(buf.Bytes(), "dense.gguf")
	if err != nil {
		t.Fatal(err)
	}
	want := "dense.gguf: no MoE layers found (architecture llama)"
	if _, err := f.MoE(); err == nil || err.Error() != want {
		t.Errorf("MoE: %v, want %q", err, want)
	}
	if _, err := f.ModelSpec(); err == nil || err.Error() != want {
		t.Errorf("ModelSpec: %v, want %q", err, want)
	}
	var out bytes.Buffer
	if err := f.WriteInspect(&out, 0); err != nil || !strings.Contains(out.String(), want) {
		t.Errorf("inspect of a dense model: %v\n%s", err, out.String())
	}
	if _, err := f.ReadTensorF32("nope"); err == nil {
		t.Error("ReadTensorF32 of a missing tensor: no error")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
