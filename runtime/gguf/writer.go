package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/lessim/lessim/internal/atomicfile"
)

// DefaultAlignment is the data alignment when general.alignment is absent (gguf.h).
const DefaultAlignment = 32

// Writer builds a GGUF v3 file (little-endian): metadata first, then tensor infos, then
// the aligned data section. Tensor data is either given as bytes or produced by a fill
// function at write time, so multi-gigabyte files stream without being held in memory.
// A Writer is not safe for concurrent use.
type Writer struct {
	kvs       []writerKV
	keys      map[string]bool
	tensors   []writerTensor
	names     map[string]bool
	alignment int64
	progress  func(written int64) // see SetProgress
}

type writerKV struct {
	key   string
	typ   ValueType
	value any
}

type writerTensor struct {
	name   string
	typ    TypeID
	dims   []int64
	size   int64
	offset int64 // relative to the data section
	data   []byte
	fill   func(io.Writer) error
}

// NewWriter returns an empty writer with the default alignment.
func NewWriter() *Writer {
	return &Writer{keys: map[string]bool{}, names: map[string]bool{}, alignment: DefaultAlignment}
}

// AddKV appends a metadata pair. value is a Go scalar (uint8, int8, uint16, int16, uint32,
// int32, float32, bool, string, uint64, int64, float64), a slice of one of those (written
// as a GGUF array), or an Array (for nested arrays). "general.alignment" must be a
// power-of-two uint32 and sets the data alignment.
func (w *Writer) AddKV(key string, value any) error {
	if key == "" {
		return errors.New("gguf writer: empty key")
	}
	if w.keys[key] {
		return fmt.Errorf("gguf writer: duplicate key %q", key)
	}
	t, err := valueTypeOf(value)
	if err != nil {
		return fmt.Errorf("gguf writer: key %q: %w", key, err)
	}
	if key == "general.alignment" {
		a, ok := value.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf writer: general.alignment must be a power-of-two uint32, got %v (%T)", value, value)
		}
		if len(w.tensors) > 0 {
			return errors.New("gguf writer: set general.alignment before adding tensors")
		}
		w.alignment = int64(a)
	}
	if a, ok := value.(Array); ok {
		if err := checkArray(a); err != nil {
			return fmt.Errorf("gguf writer: key %q: %w", key, err)
		}
	}
	w.keys[key] = true
	w.kvs = append(w.kvs, writerKV{key, t, value})
	return nil
}

// AddTensor appends a tensor whose bytes are already encoded in ggml type typ.
// dims are in ggml order (dims[0] is the fastest-varying dimension).
func (w *Writer) AddTensor(name string, typ TypeID, dims []int64, data []byte) error {
	t, err := w.newTensor(name, typ, dims)
	if err != nil {
		return err
	}
	if int64(len(data)) != t.size {
		return fmt.Errorf("gguf writer: tensor %s: %d data bytes, want %d for %s %v", name, len(data), t.size, typ.Name(), dims)
	}
	t.data = data
	w.add(t)
	return nil
}

// AddTensorFunc appends a tensor whose bytes fill writes when the file is written.
// fill must write exactly the tensor's size in bytes (TensorSize).
func (w *Writer) AddTensorFunc(name string, typ TypeID, dims []int64, fill func(io.Writer) error) error {
	t, err := w.newTensor(name, typ, dims)
	if err != nil {
		return err
	}
	if fill == nil {
		return fmt.Errorf("gguf writer: tensor %s: nil fill function", name)
	}
	t.fill = fill
	w.add(t)
	return nil
}

// TensorSize is the storage in bytes of a tensor of type typ and ggml dims.
func TensorSize(typ TypeID, dims []int64) (int64, error) {
	g, ok := ggmlTypes[typ]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type id %d", uint32(typ))
	}
	if len(dims) == 0 || len(dims) > 4 {
		return 0, fmt.Errorf("%d dimensions (want 1 to 4)", len(dims))
	}
	n := int64(1)
	for _, d := range dims {
		if d <= 0 {
			return 0, fmt.Errorf("dimension %d in %v is not positive", d, dims)
		}
		if n > math.MaxInt64/d {
			return 0, fmt.Errorf("dimensions %v overflow", dims)
		}
		n *= d
	}
	if dims[0]%g.BlockWeights != 0 {
		return 0, fmt.Errorf("first dimension %d is not a multiple of the %s block size %d", dims[0], g.Name, g.BlockWeights)
	}
	if n/g.BlockWeights > math.MaxInt64/g.BlockBytes {
		return 0, fmt.Errorf("dimensions %v overflow", dims)
	}
	return n / g.BlockWeights * g.BlockBytes, nil
}

func (w *Writer) newTensor(name string, typ TypeID, dims []int64) (writerTensor, error) {
	if name == "" {
		return writerTensor{}, errors.New("gguf writer: empty tensor name")
	}
	if w.names[name] {
		return writerTensor{}, fmt.Errorf("gguf writer: duplicate tensor %q", name)
	}
	size, err := TensorSize(typ, dims)
	if err != nil {
		return writerTensor{}, fmt.Errorf("gguf writer: tensor %s: %w", name, err)
	}
	return writerTensor{name: name, typ: typ, dims: append([]int64(nil), dims...), size: size}, nil
}

func (w *Writer) add(t writerTensor) {
	var off int64
	if n := len(w.tensors); n > 0 {
		last := w.tensors[n-1]
		off = alignUp(last.offset+last.size, w.alignment)
	}
	t.offset = off
	w.names[t.name] = true
	w.tensors = append(w.tensors, t)
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// WriteFile writes the file to path atomically (package internal/atomicfile: a
// temporary file in the same folder, synced and renamed on success), so a failed or
// interrupted write leaves no partial model behind and whatever was at path untouched.
func (w *Writer) WriteFile(path string) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := w.WriteTo(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// SetProgress makes WriteTo (and WriteFile) call fn with the bytes written so
// far after each buffered write (about every MiB); nil turns it off.
func (w *Writer) SetProgress(fn func(written int64)) { w.progress = fn }

// DataSize is the size in bytes of the tensor data section (every tensor,
// aligned): all of the file but its header and tensor table.
func (w *Writer) DataSize() int64 {
	if len(w.tensors) == 0 {
		return 0
	}
	last := w.tensors[len(w.tensors)-1]
	return alignUp(last.offset+last.size, w.alignment)
}

// Size is the size in bytes of the whole file WriteTo writes: header,
// tensor table, padding and data section. It is known before any tensor
// data is made, so a caller can check the file fits before writing it.
func (w *Writer) Size() (int64, error) {
	cw := &countingWriter{w: io.Discard}
	if err := w.writeHeader(cw); err != nil {
		return 0, err
	}
	return alignUp(cw.n, w.alignment) + w.DataSize(), nil
}

// writeHeader writes the magic, version, metadata and tensor table to out.
func (w *Writer) writeHeader(out io.Writer) error {
	e := encoder{w: out}
	e.bytes([]byte("GGUF"))
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		e.str(kv.key)
		e.u32(uint32(kv.typ))
		e.value(kv.value)
	}
	for _, t := range w.tensors {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.typ))
		e.u64(uint64(t.offset))
	}
	return e.err
}

// WriteTo writes the whole file to out and returns the bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	cw := &countingWriter{w: out, report: w.progress}
	bw := bufio.NewWriterSize(cw, 1<<20)
	if err := w.writeHeader(bw); err != nil {
		return cw.n, err
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	dataStart := alignUp(cw.n, w.alignment)
	if err := pad(bw, dataStart-cw.n); err != nil {
		return cw.n, err
	}
	for _, t := range w.tensors {
		if err := bw.Flush(); err != nil {
			return cw.n, err
		}
		if want := dataStart + t.offset; cw.n != want {
			return cw.n, fmt.Errorf("tensor %s: at byte %d, want %d", t.name, cw.n, want)
		}
		if t.fill != nil {
			lw := &limitWriter{w: bw, left: t.size}
			if err := t.fill(lw); err != nil {
				return cw.n, fmt.Errorf("tensor %s: %w", t.name, err)
			}
			if lw.left != 0 {
				return cw.n, fmt.Errorf("tensor %s: fill wrote %d bytes, want %d", t.name, t.size-lw.left, t.size)
			}
		} else if _, err := bw.Write(t.data); err != nil {
			return cw.n, err
		}
		if err := pad(bw, alignUp(t.size, w.alignment)-t.size); err != nil {
			return cw.n, err
		}
	}
	err := bw.Flush()
	return cw.n, err
}

func pad(w io.Writer, n int64) error {
	if n == 0 {
		return nil
	}
	_, err := w.Write(make([]byte, n))
	return err
}

type countingWriter struct {
	w      io.Writer
	n      int64
	report func(int64) // nil: none
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if c.report != nil {
		c.report(c.n)
	}
	return n, err
}

// limitWriter rejects writes beyond the tensor's size.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("fill wrote more than the tensor size (%d bytes too many)", int64(len(p))-l.left)
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

// encoder writes little-endian GGUF primitives and remembers the first error.
type encoder struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *encoder) bytes(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}
func (e *encoder) u8(v uint8) { e.buf[0] = v; e.bytes(e.buf[:1]) }
func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:], v)
	e.bytes(e.buf[:2])
}
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], v)
	e.bytes(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.bytes(e.buf[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.bytes([]byte(s))
}

func (e *encoder) value(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case Array:
		e.u32(uint32(x.Elem))
		e.u64(uint64(x.Len()))
		e.elements(x.Values)
	default:
		a, _ := asArray(v)
		e.value(a)
	}
}

func (e *encoder) elements(vs any) {
	switch s := vs.(type) {
	case []uint8:
		for _, x := range s {
			e.value(x)
		}
	case []int8:
		for _, x := range s {
			e.value(x)
		}
	case []uint16:
		for _, x := range s {
			e.value(x)
		}
	case []int16:
		for _, x := range s {
			e.value(x)
		}
	case []uint32:
		for _, x := range s {
			e.value(x)
		}
	case []int32:
		for _, x := range s {
			e.value(x)
		}
	case []float32:
		for _, x := range s {
			e.value(x)
		}
	case []bool:
		for _, x := range s {
			e.value(x)
		}
	case []string:
		for _, x := range s {
			e.value(x)
		}
	case []uint64:
		for _, x := range s {
			e.value(x)
		}
	case []int64:
		for _, x := range s {
			e.value(x)
		}
	case []float64:
		for _, x := range s {
			e.value(x)
		}
	case []Array:
		for _, x := range s {
			e.value(x)
		}
	}
}

// scalarType is the GGUF type of a Go scalar, or false.
func scalarType(v any) (ValueType, bool) {
	switch v.(type) {
	case uint8:
		return TypeUint8, true
	case int8:
		return TypeInt8, true
	case uint16:
		return TypeUint16, true
	case int16:
		return TypeInt16, true
	case uint32:
		return TypeUint32, true
	case int32:
		return TypeInt32, true
	case float32:
		return TypeFloat32, true
	case bool:
		return TypeBool, true
	case string:
		return TypeString, true
	case uint64:
		return TypeUint64, true
	case int64:
		return TypeInt64, true
	case float64:
		return TypeFloat64, true
	}
	return 0, false
}

// asArray wraps a typed Go slice as an Array.
func asArray(v any) (Array, bool) {
	switch v.(type) {
	case []uint8:
		return Array{TypeUint8, v}, true
	case []int8:
		return Array{TypeInt8, v}, true
	case []uint16:
		return Array{TypeUint16, v}, true
	case []int16:
		return Array{TypeInt16, v}, true
	case []uint32:
		return Array{TypeUint32, v}, true
	case []int32:
		return Array{TypeInt32, v}, true
	case []float32:
		return Array{TypeFloat32, v}, true
	case []bool:
		return Array{TypeBool, v}, true
	case []string:
		return Array{TypeString, v}, true
	case []uint64:
		return Array{TypeUint64, v}, true
	case []int64:
		return Array{TypeInt64, v}, true
	case []float64:
		return Array{TypeFloat64, v}, true
	case []Array:
		return Array{TypeArray, v}, true
	}
	if a, ok := v.(Array); ok {
		return a, true
	}
	return Array{}, false
}

func valueTypeOf(v any) (ValueType, error) {
	if t, ok := scalarType(v); ok {
		return t, nil
	}
	if a, ok := asArray(v); ok {
		return TypeArray, checkArray(a)
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}

// checkArray verifies that an Array's element type matches its Go slice.
func checkArray(a Array) error {
	if _, nested := a.Values.(Array); nested {
		return errors.New("array values must be a slice, not an Array")
	}
	b, ok := asArray(a.Values)
	if !ok || b.Elem != a.Elem {
		return fmt.Errorf("array element type %s does not match values of type %T", a.Elem, a.Values)
	}
	if sub, ok := a.Values.([]Array); ok {
		for _, s := range sub {
			if err := checkArray(s); err != nil {
				return err
			}
		}
	}
	return nil
}
