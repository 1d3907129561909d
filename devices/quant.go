package devices

import (
	"fmt"
	"slices"
	"strings"
)

// QuantType is a ggml tensor type name as GGUF files spell it (upper case), e.g. "Q4_K".
type QuantType string

// blockLayout is ggml's storage of one quant block: Weights weights in Bytes bytes.
type blockLayout struct{ Weights, Bytes int64 }

// quantBlocks are ggml's block sizes (ggml-common.h / ggml.c type traits).
// Reference: ggml type_traits: Q3_K 110 B per 256 weights, Q4_K 144, Q5_K 176,
// Q6_K 210, Q8_0 34 B per 32, Q4_0 18 B per 32, MXFP4 17 B per 32, F16 2 B,
// BF16 2 B, F32 4 B.
var quantBlocks = map[QuantType]blockLayout{
	"F32":  {1, 4},
	"F16":  {1, 2},
	"BF16": {1, 2},
	"Q4_0": {32, 18},
	"Q4_1": {32, 20},
	"Q5_0": {32, 22},
	"Q5_1": {32, 24},
	"Q8_0": {32, 34},
	"Q2_K": {256, 84},
	"Q3_K": {256, 110},
	"Q4_K": {256, 144},
	"Q5_K": {256, 176},
	"Q6_K": {256, 210},
	"Q8_K": {256, 292},
	// MXFP4: an E8M0 scale byte and 32 4-bit E2M1 values (block_mxfp4).
	"MXFP4": {32, 17},
}

// QuantTypes lists the known type names, sorted.
func QuantTypes() []string {
	out := make([]string, 0, len(quantBlocks))
	for q := range quantBlocks {
		out = append(out, string(q))
	}
	slices.Sort(out)
	return out
}

// ParseQuantType accepts any case ("q4_k" or "Q4_K").
func ParseQuantType(s string) (QuantType, error) {
	q := QuantType(strings.ToUpper(strings.TrimSpace(s)))
	if _, ok := quantBlocks[q]; !ok {
		return "", fmt.Errorf("unknown quant type %q (valid: %s)", s, strings.Join(QuantTypes(), ", "))
	}
	return q, nil
}

// TensorBytes is the storage of n weights of type q. n must be a whole number of blocks.
func (q QuantType) TensorBytes(n int64) (int64, error) {
	b, ok := quantBlocks[q]
	if !ok {
		return 0, fmt.Errorf("unknown quant type %q (valid: %s)", string(q), strings.Join(QuantTypes(), ", "))
	}
	if n%b.Weights != 0 {
		return 0, fmt.Errorf("%d weights is not a whole number of %s blocks of %d", n, q, b.Weights)
	}
	return n / b.Weights * b.Bytes, nil
}

// BitsPerWeight is the storage cost of one weight.
func (q QuantType) BitsPerWeight() float64 {
	b, ok := quantBlocks[q]
	if !ok {
		return 0
	}
	return float64(b.Bytes*8) / float64(b.Weights)
}
