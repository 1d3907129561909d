package gguf

import (
	"fmt"

	"github.com/lessim/lessim/devices"
)

// TypeID is a ggml tensor type id as stored in a GGUF tensor info (enum ggml_type).
type TypeID uint32

// ggmlType is one entry of ggml's type table: its GGUF name and block layout.
type ggmlType struct {
	Name          devices.QuantType
	BlockWeights  int64
	BlockBytes    int64
	Dequantizable bool
}

// ggmlTypes maps ggml type ids to names and block sizes.
// Reference: ggml.h enum ggml_type and the block_* static_asserts in ggml-common.h
// (llama.cpp as vendored by github.com/ollama/ollama v0.17.4). Ids 4, 5 and 31–33,
// 36–38 were removed from ggml and are rejected.
var ggmlTypes = map[TypeID]ggmlType{
	0:  {"F32", 1, 4, true},
	1:  {"F16", 1, 2, true},
	2:  {"Q4_0", 32, 18, false},
	3:  {"Q4_1", 32, 20, false},
	6:  {"Q5_0", 32, 22, false},
	7:  {"Q5_1", 32, 24, false},
	8:  {"Q8_0", 32, 34, true},
	9:  {"Q8_1", 32, 36, false},
	10: {"Q2_K", 256, 84, false},
	11: {"Q3_K", 256, 110, false},
	12: {"Q4_K", 256, 144, false},
	13: {"Q5_K", 256, 176, false},
	14: {"Q6_K", 256, 210, false},
	15: {"Q8_K", 256, 292, false},
	16: {"IQ2_XXS", 256, 66, false},
	17: {"IQ2_XS", 256, 74, false},
	18: {"IQ3_XXS", 256, 98, false},
	19: {"IQ1_S", 256, 50, false},
	20: {"IQ4_NL", 32, 18, false},
	21: {"IQ3_S", 256, 110, false},
	22: {"IQ2_S", 256, 82, false},
	23: {"IQ4_XS", 256, 136, false},
	24: {"I8", 1, 1, false},
	25: {"I16", 1, 2, false},
	26: {"I32", 1, 4, false},
	27: {"I64", 1, 8, false},
	28: {"F64", 1, 8, false},
	29: {"IQ1_M", 256, 56, false},
	30: {"BF16", 1, 2, true},
	34: {"TQ1_0", 256, 54, false},
	35: {"TQ2_0", 256, 66, false},
	39: {"MXFP4", 32, 17, false},
}

// Type ids the writer and synthetic models use.
const (
	TypeF32   TypeID = 0
	TypeF16   TypeID = 1
	TypeQ8_0  TypeID = 8
	TypeQ3_K  TypeID = 11
	TypeQ4_K  TypeID = 12
	TypeBF16  TypeID = 30
	TypeMXFP4 TypeID = 39
)

// Name is the type's GGUF name, e.g. "Q8_0", or "type(N)" for an unknown id.
func (t TypeID) Name() devices.QuantType {
	if g, ok := ggmlTypes[t]; ok {
		return g.Name
	}
	return devices.QuantType(fmt.Sprintf("type(%d)", uint32(t)))
}

// Known reports whether t is a ggml type this package can size.
func (t TypeID) Known() bool {
	_, ok := ggmlTypes[t]
	return ok
}

// TypeByName returns the id of a ggml type name in any case ("q8_0", "F16").
func TypeByName(name string) (TypeID, error) {
	q := devices.QuantType(upper(name))
	for id, g := range ggmlTypes {
		if g.Name == q {
			return id, nil
		}
	}
	return 0, fmt.Errorf("unknown ggml type %q", name)
}

// rowBytes is the storage of n weights of type t; n must be a whole number of blocks.
func (t TypeID) bytesFor(n int64) (int64, error) {
	g, ok := ggmlTypes[t]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type id %d", uint32(t))
	}
	if n%g.BlockWeights != 0 {
		return 0, fmt.Errorf("%d elements is not a whole number of %s blocks of %d", n, g.Name, g.BlockWeights)
	}
	return n / g.BlockWeights * g.BlockBytes, nil
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// ValueType is a GGUF metadata value type (enum gguf_type in gguf.h).
type ValueType uint32

// GGUF metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// String is the gguf.h name of the value type, e.g. "uint32".
func (v ValueType) String() string {
	if int(v) < len(valueTypeNames) {
		return valueTypeNames[v]
	}
	return fmt.Sprintf("type(%d)", uint32(v))
}

// fixedSize is the encoded size of a scalar of type v (0 for string, array and unknown).
func (v ValueType) fixedSize() int64 {
	switch v {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// Array is a GGUF array value: Elem is the element type and Values holds a Go slice
// of the matching type ([]uint8, []int8, []uint16, []int16, []uint32, []int32,
// []float32, []bool, []string, []uint64, []int64, []float64, or []Array when
// Elem is TypeArray).
type Array struct {
	Elem   ValueType
	Values any
}

// Len is the number of elements.
func (a Array) Len() int {
	switch v := a.Values.(type) {
	case []uint8:
		return len(v)
	case []int8:
		return len(v)
	case []uint16:
		return len(v)
	case []int16:
		return len(v)
	case []uint32:
		return len(v)
	case []int32:
		return len(v)
	case []float32:
		return len(v)
	case []bool:
		return len(v)
	case []string:
		return len(v)
	case []uint64:
		return len(v)
	case []int64:
		return len(v)
	case []float64:
		return len(v)
	case []Array:
		return len(v)
	}
	return 0
}
