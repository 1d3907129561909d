package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// File is a parsed GGUF file: its metadata and tensor directory. Tensor data stays on
// disk; ReadTensorF32 reads it on demand. A File from Open must be closed.
type File struct {
	Name       string // the path or name given to Open/Parse, used in error messages
	Version    uint32
	Size       int64 // file size in bytes
	Alignment  int64 // data alignment (general.alignment, default 32)
	DataOffset int64 // absolute offset of the data section
	KVs        []KV  // metadata in file order
	Tensors    []TensorInfo

	kvIndex     map[string]int
	tensorIndex map[string]int
	r           io.ReaderAt
	closer      io.Closer
}

// KV is one metadata pair. Value holds a Go scalar of the matching type (uint8, int8,
// uint16, int16, uint32, int32, float32, bool, string, uint64, int64, float64) or an
// Array when Type is TypeArray.
type KV struct {
	Key   string
	Type  ValueType
	Value any
}

// TensorInfo is one tensor's directory entry.
type TensorInfo struct {
	Name       string
	Dims       []int64 // ggml order: Dims[0] is the fastest-varying
	Type       TypeID
	Offset     int64 // relative to the data section, as stored
	FileOffset int64 // absolute: DataOffset + Offset
	Bytes      int64 // storage from the type's block layout
}

// Elements is the number of values in the tensor.
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// End is the absolute offset one past the tensor's last byte.
func (t *TensorInfo) End() int64 { return t.FileOffset + t.Bytes }

// Open parses the GGUF file at path. The returned File keeps the file open for
// ReadTensorF32 until Close.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory, not a GGUF file", path)
	}
	g, err := Parse(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	g.closer = f
	return g, nil
}

// Close releases the file opened by Open (a no-op for Parse).
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// maxDims is GGML_MAX_DIMS.
const maxDims = 4

// Parse reads the header, metadata and tensor directory of a GGUF v2/v3 file of size
// bytes from r; name prefixes error messages. Every length is checked against the
// bytes left in the file before anything is allocated, so a corrupt file yields an
// error, never a panic or a huge allocation.
func Parse(r io.ReaderAt, size int64, name string) (*File, error) {
	d := &decoder{br: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16), size: size, name: name}
	f, err := parse(d)
	if err != nil {
		return nil, err
	}
	f.Name, f.Size, f.r = name, size, r
	return f, nil
}

func parse(d *decoder) (*File, error) {
	var magic [4]byte
	if d.size < 4 {
		return nil, fmt.Errorf("%s: not a GGUF file (%d bytes)", d.name, d.size)
	}
	d.read(magic[:], "magic")
	if d.err == nil && string(magic[:]) != "GGUF" {
		return nil, fmt.Errorf("%s: not a GGUF file (magic %q)", d.name, magic[:])
	}
	f := &File{Alignment: DefaultAlignment, kvIndex: map[string]int{}, tensorIndex: map[string]int{}}
	f.Version = d.u32("version")
	if d.err != nil {
		return nil, d.err
	}
	switch {
	case f.Version == 2 || f.Version == 3:
	case f.Version&0xffff == 0 && (f.Version>>24 == 2 || f.Version>>24 == 3):
		return nil, fmt.Errorf("%s: big-endian GGUF (version %d) is not supported", d.name, f.Version>>24)
	default:
		return nil, fmt.Errorf("%s: unsupported GGUF version %d (supported: 2, 3)", d.name, f.Version)
	}
	nTensors := d.u64("tensor count")
	nKV := d.u64("metadata count")
	if d.err != nil {
		return nil, d.err
	}
	// Each KV takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor info
	// at least 8 + 4 + 4 + 8.
	if err := d.fits(nKV, 13, "metadata count"); err != nil {
		return nil, err
	}
	if err := d.fits(nTensors, 24, "tensor count"); err != nil {
		return nil, err
	}
	f.KVs = make([]KV, 0, nKV)
	for i := uint64(0); i < nKV; i++ {
		key := d.str("metadata key")
		t := ValueType(d.u32("value type of " + key))
		v := d.value(t, key, 0)
		if d.err != nil {
			return nil, d.err
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, fmt.Errorf("%s: duplicate metadata key %q", d.name, key)
		}
		f.kvIndex[key] = len(f.KVs)
		f.KVs = append(f.KVs, KV{key, t, v})
	}
	if kv, ok := f.kv("general.alignment"); ok {
		a, isU32 := kv.Value.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("%s: general.alignment must be a power-of-two uint32, got %v (%s)", d.name, kv.Value, kv.Type)
		}
		f.Alignment = int64(a)
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensorIndex[t.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate tensor %q", d.name, t.Name)
		}
		if t.Offset%f.Alignment != 0 {
			return nil, fmt.Errorf("%s: tensor %s: offset %d is not a multiple of the alignment %d", d.name, t.Name, t.Offset, f.Alignment)
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = alignUp(d.pos, f.Alignment)
	byOffset := make([]*TensorInfo, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset > math.MaxInt64-f.DataOffset-t.Bytes {
			return nil, fmt.Errorf("%s: tensor %s: offset %d overflows", d.name, t.Name, t.Offset)
		}
		t.FileOffset = f.DataOffset + t.Offset
		byOffset[i] = t
	}
	slices.SortStableFunc(byOffset, func(a, b *TensorInfo) int { return compareInt64(a.FileOffset, b.FileOffset) })
	for i, t := range byOffset {
		if t.End() > d.size {
			return nil, fmt.Errorf("%s: truncated: tensor %s ends at byte %d, file has %d", d.name, t.Name, t.End(), d.size)
		}
		if i > 0 && t.FileOffset < byOffset[i-1].End() {
			return nil, fmt.Errorf("%s: tensor %s (bytes %d..%d) overlaps tensor %s (ends at %d)", d.name, t.Name, t.FileOffset, t.End(), byOffset[i-1].Name, byOffset[i-1].End())
		}
	}
	return f, nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (d *decoder) tensorInfo(i uint64) (TensorInfo, error) {
	var t TensorInfo
	t.Name = d.str(fmt.Sprintf("name of tensor %d", i))
	n := d.u32("dimension count of " + t.Name)
	if d.err != nil {
		return t, d.err
	}
	if n == 0 || n > maxDims {
		return t, fmt.Errorf("%s: tensor %s: %d dimensions (want 1 to %d)", d.name, t.Name, n, maxDims)
	}
	t.Dims = make([]int64, n)
	for j := range t.Dims {
		v := d.u64("dimensions of " + t.Name)
		if d.err == nil && (v == 0 || v > math.MaxInt64) {
			return t, fmt.Errorf("%s: tensor %s: dimension %d is %d", d.name, t.Name, j, v)
		}
		t.Dims[j] = int64(v)
	}
	t.Type = TypeID(d.u32("type of " + t.Name))
	off := d.u64("offset of " + t.Name)
	if d.err != nil {
		return t, d.err
	}
	if !t.Type.Known() {
		return t, fmt.Errorf("%s: tensor %s: unknown ggml type id %d", d.name, t.Name, uint32(t.Type))
	}
	size, err := TensorSize(t.Type, t.Dims)
	if err != nil {
		return t, fmt.Errorf("%s: tensor %s: %w", d.name, t.Name, err)
	}
	if off > math.MaxInt64 {
		return t, fmt.Errorf("%s: tensor %s: offset %d overflows", d.name, t.Name, off)
	}
	t.Bytes, t.Offset = size, int64(off)
	return t, nil
}

// decoder reads little-endian GGUF primitives, tracks the position and remembers the
// first error.
type decoder struct {
	br   *bufio.Reader
	pos  int64
	size int64
	name string
	err  error
	buf  [8]byte
}

// left is the number of unread bytes.
func (d *decoder) left() int64 { return d.size - d.pos }

// fits checks that count items of at least minSize bytes each can fit in the rest of
// the file.
func (d *decoder) fits(count uint64, minSize int64, what string) error {
	if count > uint64(d.left()/minSize) {
		return fmt.Errorf("%s: truncated or corrupt: %s %d at byte %d needs at least %d bytes per item, %d bytes left", d.name, what, count, d.pos, minSize, d.left())
	}
	return nil
}

func (d *decoder) read(p []byte, what string) {
	if d.err != nil {
		return
	}
	if int64(len(p)) > d.left() {
		d.err = fmt.Errorf("%s: truncated: %s at byte %d needs %d bytes, file has %d", d.name, what, d.pos, len(p), d.size)
		return
	}
	if _, err := io.ReadFull(d.br, p); err != nil {
		d.err = fmt.Errorf("%s: reading %s at byte %d: %w", d.name, what, d.pos, err)
		return
	}
	d.pos += int64(len(p))
}

func (d *decoder) u8(what string) uint8 {
	d.read(d.buf[:1], what)
	return d.buf[0]
}
func (d *decoder) u16(what string) uint16 {
	d.read(d.buf[:2], what)
	return binary.LittleEndian.Uint16(d.buf[:])
}
func (d *decoder) u32(what string) uint32 {
	d.read(d.buf[:4], what)
	return binary.LittleEndian.Uint32(d.buf[:])
}
func (d *decoder) u64(what string) uint64 {
	d.read(d.buf[:8], what)
	return binary.LittleEndian.Uint64(d.buf[:])
}

func (d *decoder) str(what string) string {
	n := d.u64("length of " + what)
	if d.err != nil {
		return ""
	}
	if n > uint64(d.left()) {
		d.err = fmt.Errorf("%s: truncated or corrupt: length %d of %s at byte %d, %d bytes left", d.name, n, what, d.pos-8, d.left())
		return ""
	}
	p := make([]byte, n)
	d.read(p, what)
	return string(p)
}

// maxNesting bounds nested arrays (gguf.cpp itself rejects any nesting).
const maxNesting = 8

func (d *decoder) value(t ValueType, key string, depth int) any {
	if d.err != nil {
		return nil
	}
	what := "value of " + key
	switch t {
	case TypeUint8:
		return d.u8(what)
	case TypeInt8:
		return int8(d.u8(what))
	case TypeUint16:
		return d.u16(what)
	case TypeInt16:
		return int16(d.u16(what))
	case TypeUint32:
		return d.u32(what)
	case TypeInt32:
		return int32(d.u32(what))
	case TypeFloat32:
		return math.Float32frombits(d.u32(what))
	case TypeBool:
		b := d.u8(what)
		if d.err == nil && b > 1 {
			d.err = fmt.Errorf("%s: %s: bool byte %d at byte %d is not 0 or 1", d.name, key, b, d.pos-1)
		}
		return b == 1
	case TypeString:
		return d.str(what)
	case TypeUint64:
		return d.u64(what)
	case TypeInt64:
		return int64(d.u64(what))
	case TypeFloat64:
		return math.Float64frombits(d.u64(what))
	case TypeArray:
		if depth >= maxNesting {
			d.err = fmt.Errorf("%s: %s: arrays nested deeper than %d", d.name, key, maxNesting)
			return nil
		}
		return d.array(key, depth)
	}
	d.err = fmt.Errorf("%s: %s: unknown value type %d at byte %d", d.name, key, uint32(t), d.pos-4)
	return nil
}

func (d *decoder) array(key string, depth int) any {
	elem := ValueType(d.u32("array type of " + key))
	n := d.u64("array length of " + key)
	if d.err != nil {
		return nil
	}
	minSize := elem.fixedSize()
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if minSize == 0 {
		d.err = fmt.Errorf("%s: %s: unknown array element type %d", d.name, key, uint32(elem))
		return nil
	}
	if err := d.fits(n, minSize, "array length of "+key); err != nil {
		d.err = err
		return nil
	}
	vals := collect(d, elem, key, depth, int(n))
	if d.err != nil {
		return nil
	}
	return Array{Elem: elem, Values: vals}
}

// collect reads n elements of type elem into a typed slice. n was checked against the
// bytes left in the file.
func collect(d *decoder, elem ValueType, key string, depth, n int) any {
	switch elem {
	case TypeUint8:
		return readN[uint8](d, elem, key, depth, n)
	case TypeInt8:
		return readN[int8](d, elem, key, depth, n)
	case TypeUint16:
		return readN[uint16](d, elem, key, depth, n)
	case TypeInt16:
		return readN[int16](d, elem, key, depth, n)
	case TypeUint32:
		return readN[uint32](d, elem, key, depth, n)
	case TypeInt32:
		return readN[int32](d, elem, key, depth, n)
	case TypeFloat32:
		return readN[float32](d, elem, key, depth, n)
	case TypeBool:
		return readN[bool](d, elem, key, depth, n)
	case TypeString:
		return readN[string](d, elem, key, depth, n)
	case TypeUint64:
		return readN[uint64](d, elem, key, depth, n)
	case TypeInt64:
		return readN[int64](d, elem, key, depth, n)
	case TypeFloat64:
		return readN[float64](d, elem, key, depth, n)
	case TypeArray:
		return readN[Array](d, elem, key, depth+1, n)
	}
	return nil
}

func readN[T any](d *decoder, elem ValueType, key string, depth, n int) []T {
	out := make([]T, 0, min(n, 1<<16)) // grow as the data proves to exist
	for range n {
		v := d.value(elem, key, depth)
		if d.err != nil {
			return nil
		}
		x, ok := v.(T)
		if !ok {
			d.err = errors.New("internal: array element type mismatch")
			return nil
		}
		out = append(out, x)
	}
	return out
}
