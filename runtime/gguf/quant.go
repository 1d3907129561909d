package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Q8_0 block layout (ggml-common.h block_q8_0): an fp16 scale d then 32 int8 quants;
// weight j of the block is d·qs[j].
const (
	q8Block      = 32
	q8BlockBytes = 34
)

// F32ToF16 converts x to IEEE 754 half precision with round-to-nearest-even
// (the rounding of ggml's GGML_FP32_TO_FP16 on hardware with F16C/NEON).
func F32ToF16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // overflow
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e <= 0 { // subnormal half (or zero)
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint32(14 - e) // 24-bit mantissa down to 10-e bits
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is still correct (up to Inf)
	}
	return sign | uint16(h)
}

// F16ToF32 converts an IEEE 754 half to float32 exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: value = man · 2^-24
		v := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// BF16ToF32 converts a bfloat16 to float32 exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// AppendF32 appends xs as little-endian F32.
func AppendF32(dst []byte, xs []float32) []byte {
	for _, x := range xs {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// AppendF16 appends xs as little-endian F16 (round to nearest even).
func AppendF16(dst []byte, xs []float32) []byte {
	for _, x := range xs {
		dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(x))
	}
	return dst
}

// AppendQ8_0 appends xs quantized to Q8_0 the way ggml's quantize_row_q8_0_ref does:
// per block of 32, d = max|x|/127 stored as fp16, q = round(x/d) (half away from zero).
// len(xs) must be a multiple of 32.
func AppendQ8_0(dst []byte, xs []float32) ([]byte, error) {
	if len(xs)%q8Block != 0 {
		return dst, fmt.Errorf("Q8_0: %d values is not a multiple of %d", len(xs), q8Block)
	}
	n := len(xs) / q8Block * q8BlockBytes
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	for b := range len(xs) / q8Block {
		blk := xs[b*q8Block : (b+1)*q8Block]
		o := out[b*q8BlockBytes : (b+1)*q8BlockBytes]
		// |x| compares like its bit pattern with the sign cleared (for non-NaN x), and
		// an integer max is branch-free.
		var amaxBits uint32
		for _, v := range blk {
			amaxBits = max(amaxBits, math.Float32bits(v)&0x7fffffff)
		}
		d := math.Float32frombits(amaxBits) / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(o, F32ToF16(d))
		q := o[2:q8BlockBytes]
		for j, v := range blk {
			// roundf: half away from zero, as y + copysign(0.5, y) truncated (branch-free:
			// the signs are random). NB: the addition is in float64, where it is exact;
			// in float32 it would round 0.49999997 up to 1.
			y := float64(v * id)
			half := math.Float64frombits(0x3fe0000000000000 | math.Float64bits(y)&(1<<63))
			q[j] = byte(int8(int32(y + half)))
		}
	}
	return dst[:len(dst)+n], nil
}

// AppendType appends xs encoded as F32, F16 or Q8_0.
func AppendType(dst []byte, t TypeID, xs []float32) ([]byte, error) {
	switch t {
	case TypeF32:
		return AppendF32(dst, xs), nil
	case TypeF16:
		return AppendF16(dst, xs), nil
	case TypeQ8_0:
		return AppendQ8_0(dst, xs)
	}
	return dst, fmt.Errorf("cannot encode %s (the writer quantizes F32, F16 and Q8_0)", t.Name())
}

// Quantizer encodes rows of rowLen values (len(xs) a multiple of rowLen,
// rowLen a whole number of t's blocks) as ggml type t, as ggml's
// ggml_quantize_chunk does; runtime/llama.Quantize is one.
type Quantizer func(t TypeID, xs []float32, rowLen int64) ([]byte, error)

// encode is AppendType(nil, t, xs), or q for a type AppendType cannot write.
func encode(q Quantizer, t TypeID, xs []float32, rowLen int64) ([]byte, error) {
	if t == TypeF32 || t == TypeF16 || t == TypeQ8_0 || q == nil {
		return AppendType(nil, t, xs)
	}
	return q(t, xs, rowLen)
}

// decode dequantizes a whole number of elements of type t from p into dst.
func decode(dst []float32, t TypeID, p []byte) error {
	switch t {
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		}
	case TypeF16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(p[2*i:]))
		}
	case TypeBF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(p[2*i:]))
		}
	case TypeQ8_0:
		for b := 0; b < len(dst)/q8Block; b++ {
			blk := p[b*q8BlockBytes:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := range q8Block {
				dst[b*q8Block+j] = d * float32(int8(blk[2+j]))
			}
		}
	default:
		return fmt.Errorf("cannot dequantize %s (supported: F32, F16, BF16, Q8_0)", t.Name())
	}
	return nil
}
