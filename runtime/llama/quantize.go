//go:build llamacpp

package llama

/*
#include "ggml.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/lessim/lessim/runtime/gguf"
)

var _ gguf.Quantizer = Quantize

// Quantize encodes xs, rows of rowLen values, as ggml type t with ggml's own
// quantizer (ggml_quantize_chunk, no importance matrix: the reference
// quantizers llama-quantize uses without one). It refuses what ggml would
// abort on: an unknown type or one that needs an importance matrix, a row
// that is not a whole number of blocks, values that are not whole rows.
func Quantize(t gguf.TypeID, xs []float32, rowLen int64) ([]byte, error) {
	if !t.Known() || t == gguf.TypeF32 {
		return nil, fmt.Errorf("quantize: %s is not a type ggml quantizes to", t.Name())
	}
	ct := C.enum_ggml_type(t)
	if C.ggml_quantize_requires_imatrix(ct) {
		return nil, fmt.Errorf("quantize: %s needs an importance matrix", t.Name())
	}
	blk := int64(C.ggml_blck_size(ct))
	if rowLen <= 0 || rowLen%blk != 0 || int64(len(xs))%rowLen != 0 || len(xs) == 0 {
		return nil, fmt.Errorf("quantize: %d values in rows of %d are not whole rows of whole %s blocks of %d", len(xs), rowLen, t.Name(), blk)
	}
	rows := int64(len(xs)) / rowLen
	out := make([]byte, int64(C.ggml_row_size(ct, C.int64_t(rowLen)))*rows)
	n := C.ggml_quantize_chunk(ct, (*C.float)(unsafe.Pointer(&xs[0])), unsafe.Pointer(&out[0]), 0, C.int64_t(rows), C.int64_t(rowLen), nil)
	if int(n) != len(out) {
		return nil, fmt.Errorf("quantize: ggml wrote %d bytes of %s, want %d", int(n), t.Name(), len(out))
	}
	return out, nil
}
