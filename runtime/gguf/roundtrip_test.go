package gguf

import (
	"bytes"
	"io"
	"math"
	"reflect"
	"testing"
)

// TestRoundTripKV writes one key of every value type (including nested and empty
// arrays) and reads each back with the same Go type and value.
func TestRoundTripKV(t *testing.T) {
	values := []struct {
		key  string
		v    any
		want ValueType
	}{
		{"u8", uint8(200), TypeUint8},
		{"i8", int8(-5), TypeInt8},
		{"u16", uint16(65000), TypeUint16},
		{"i16", int16(-30000), TypeInt16},
		{"u32", uint32(4e9), TypeUint32},
		{"i32", int32(-2e9), TypeInt32},
		{"f32", float32(1.5e-7), TypeFloat32},
		{"bool.true", true, TypeBool},
		{"bool.false", false, TypeBool},
		{"str", "héllo ▁world", TypeString},
		{"str.empty", "", TypeString},
		{"u64", uint64(math.MaxUint64), TypeUint64},
		{"i64", int64(math.MinInt64), TypeInt64},
		{"f64", math.Pi, TypeFloat64},
		{"arr.u8", []uint8{1, 2, 3}, TypeArray},
		{"arr.i8", []int8{-1, 0, 1}, TypeArray},
		{"arr.u16", []uint16{1, 65535}, TypeArray},
		{"arr.i16", []int16{-2, 2}, TypeArray},
		{"arr.u32", []uint32{7}, TypeArray},
		{"arr.i32", []int32{-7, 7}, TypeArray},
		{"arr.f32", []float32{0.5, -0.25}, TypeArray},
		{"arr.bool", []bool{true, false, true}, TypeArray},
		{"arr.str", []string{"a", "", "ccc"}, TypeArray},
		{"arr.u64", []uint64{1 << 60}, TypeArray},
		{"arr.i64", []int64{-1 << 60}, TypeArray},
		{"arr.f64", []float64{1e300}, TypeArray},
		{"arr.empty", []uint32{}, TypeArray},
		{"arr.nested", Array{TypeArray, []Array{{TypeString, []string{"x", "y"}}, {TypeInt32, []int32{1, 2, 3}}, {TypeArray, []Array{{TypeBool, []bool{true}}}}}}, TypeArray},
	}
	w := NewWriter()
	for _, v := range values {
		if err := w.AddKV(v.key, v.v); err != nil {
			t.Fatalf("AddKV(%s): %v", v.key, err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := parseBytes(buf.Bytes(), "kv.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.KVs) != len(values) {
		t.Fatalf("read %d KVs, wrote %d", len(f.KVs), len(values))
	}
	for i, v := range values {
		kv := f.KVs[i]
		want := v.v
		if a, ok := asArray(v.v); ok {
			want = a
		}
		if kv.Key != v.key || kv.Type != v.want || !reflect.DeepEqual(kv.Value, want) {
			t.Errorf("KV %d: got %s %s %#v, want %s %s %#v", i, kv.Key, kv.Type, kv.Value, v.key, v.want, want)
		}
	}
	if f.Alignment != DefaultAlignment || f.DataOffset%DefaultAlignment != 0 || len(f.Tensors) != 0 {
		t.Errorf("alignment %d data offset %d tensors %d", f.Alignment, f.DataOffset, len(f.Tensors))
	}
}

func TestGetters(t *testing.T) {
	w := NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{{"general.architecture", "llama"}, {"u8", uint8(3)}, {"i32.neg", int32(-1)}, {"i64", int64(9)}, {"f32", float32(0.5)},
		{"toks", []string{"a", "b"}}, {"ints", []int32{1}}} {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := parseBytes(buf.Bytes(), "g.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if f.Arch() != "llama" {
		t.Errorf("Arch %q", f.Arch())
	}
	tests := []struct {
		name string
		got  any
		ok   bool
		want any
		wok  bool
	}{}
	add := func(name string, got any, ok bool, want any, wok bool) {
		tests = append(tests, struct {
			name string
			got  any
			ok   bool
			want any
			wok  bool
		}{name, got, ok, want, wok})
	}
	u, ok := f.Uint("u8")
	add("Uint(u8)", u, ok, uint64(3), true)
	u, ok = f.Uint("i64")
	add("Uint(i64)", u, ok, uint64(9), true)
	_, ok = f.Uint("i32.neg")
	add("Uint(negative)", nil, ok, nil, false)
	_, ok = f.Uint("f32")
	add("Uint(float)", nil, ok, nil, false)
	_, ok = f.Uint("missing")
	add("Uint(missing)", nil, ok, nil, false)
	x, ok := f.Float("f32")
	add("Float(f32)", x, ok, 0.5, true)
	x, ok = f.Float("u8")
	add("Float(u8)", x, ok, 3.0, true)
	s, ok := f.String("general.architecture")
	add("String", s, ok, "llama", true)
	_, ok = f.String("u8")
	add("String(u8)", nil, ok, nil, false)
	ss, ok := f.Strings("toks")
	add("Strings", ss, ok, []string{"a", "b"}, true)
	_, ok = f.Strings("ints")
	add("Strings(ints)", nil, ok, nil, false)
	for _, tt := range tests {
		if tt.ok != tt.wok || (tt.wok && !reflect.DeepEqual(tt.got, tt.want)) {
			t.Errorf("%s = %v, %v; want %v, %v", tt.name, tt.got, tt.ok, tt.want, tt.wok)
		}
	}
}

// TestRoundTripTensors checks offsets, alignment, padding and data of tensors of
// several types under a non-default alignment.
func TestRoundTripTensors(t *testing.T) {
	w := NewWriter()
	if err := w.AddKV("general.alignment", uint32(64)); err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, 96)
	for i := range xs {
		xs[i] = float32(i)/7 - 5
	}
	f32 := AppendF32(nil, xs[:3])
	f16 := AppendF16(nil, xs[:10])
	q8, err := AppendQ8_0(nil, xs)
	if err != nil {
		t.Fatal(err)
	}
	tensors := []struct {
		name string
		typ  TypeID
		dims []int64
		data []byte
	}{
		{"a", TypeF32, []int64{3}, f32},
		{"b.f16", TypeF16, []int64{5, 2}, f16},
		{"c.q8", TypeQ8_0, []int64{32, 1, 3}, q8},
		{"d.bf16", TypeBF16, []int64{2}, []byte{0x80, 0x3f, 0x00, 0xc0}}, // 1.0, −2.0
	}
	for _, tt := range tensors {
		if err := w.AddTensor(tt.name, tt.typ, tt.dims, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	f, err := parseBytes(buf.Bytes(), "t.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Fatalf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	var prevEnd int64
	for i, tt := range tensors {
		ti := f.Tensors[i]
		if ti.Name != tt.name || ti.Type != tt.typ || !reflect.DeepEqual(ti.Dims, tt.dims) || ti.Bytes != int64(len(tt.data)) {
			t.Errorf("tensor %d: got %+v", i, ti)
		}
		if ti.Offset%64 != 0 || ti.FileOffset != f.DataOffset+ti.Offset || ti.FileOffset < prevEnd {
			t.Errorf("tensor %s: offset %d file offset %d (previous ends %d)", ti.Name, ti.Offset, ti.FileOffset, prevEnd)
		}
		prevEnd = ti.End()
		if got := buf.Bytes()[ti.FileOffset:ti.End()]; !bytes.Equal(got, tt.data) {
			t.Errorf("tensor %s: data differs", ti.Name)
		}
		raw, err := f.ReadTensorBytes(tt.name)
		if err != nil || !bytes.Equal(raw, tt.data) {
			t.Errorf("ReadTensorBytes(%s): %v", tt.name, err)
		}
	}
	if int64(buf.Len()) != alignUp(prevEnd, 64) {
		t.Errorf("file is %d bytes, want the last tensor padded to %d", buf.Len(), alignUp(prevEnd, 64))
	}
	got, err := f.ReadTensorF32("a")
	if err != nil || !reflect.DeepEqual(got, xs[:3]) {
		t.Errorf("F32 read %v %v", got, err)
	}
	got, err = f.ReadTensorF32("d.bf16")
	if err != nil || !reflect.DeepEqual(got, []float32{1, -2}) {
		t.Errorf("BF16 read %v %v", got, err)
	}
	got, err = f.ReadTensorF32("b.f16")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if d := math.Abs(float64(v - xs[i])); d > math.Abs(float64(xs[i]))/1024 {
			t.Errorf("F16 value %d: %v, want %v", i, v, xs[i])
		}
	}
	got, err = f.ReadTensorF32("c.q8")
	if err != nil {
		t.Fatal(err)
	}
	checkQ8Error(t, xs, got)
}

func TestWriterRejects(t *testing.T) {
	w := NewWriter()
	if err := w.AddKV("k", uint32(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("x", TypeF32, []int64{2}, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
	}{
		{"duplicate key", w.AddKV("k", uint32(2))},
		{"unsupported value", w.AddKV("m", map[string]int{})},
		{"int is ambiguous", w.AddKV("i", 3)},
		{"mismatched array", w.AddKV("a", Array{TypeString, []int32{1}})},
		{"alignment not a power of two", w.AddKV("general.alignment", uint32(48))},
		{"alignment after tensors", w.AddKV("general.alignment", uint32(64))},
		{"duplicate tensor", w.AddTensor("x", TypeF32, []int64{2}, make([]byte, 8))},
		{"wrong data size", w.AddTensor("y", TypeF32, []int64{2}, make([]byte, 4))},
		{"partial block", w.AddTensor("z", TypeQ8_0, []int64{16}, make([]byte, 17))},
		{"zero dim", w.AddTensor("z", TypeF32, []int64{0}, nil)},
		{"five dims", w.AddTensor("z", TypeF32, []int64{1, 1, 1, 1, 1}, make([]byte, 4))},
		{"unknown type", w.AddTensor("z", TypeID(4), []int64{1}, make([]byte, 4))},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
	// A fill function writing the wrong amount is an error at write time.
	for _, n := range []int{4, 12} {
		w := NewWriter()
		if err := w.AddTensorFunc("f", TypeF32, []int64{2}, func(out io.Writer) error {
			_, err := out.Write(make([]byte, n))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteTo(&bytes.Buffer{}); err == nil {
			t.Errorf("fill of %d bytes for an 8-byte tensor: no error", n)
		}
	}
}

// TestVersion2: GGUF v2 has v3's layout (64-bit counts and lengths) and parses alike.
func TestVersion2(t *testing.T) {
	data := synthBytes(t, tinyOptions())
	data[4] = 2
	f, err := parseBytes(data, "v2.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Tensors) != 27 || f.Arch() != "qwen3moe" {
		t.Errorf("version %d, %d tensors, arch %q", f.Version, len(f.Tensors), f.Arch())
	}
}
