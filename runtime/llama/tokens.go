//go:build llamacpp

package llama

/*
#include <stdlib.h>
#include "llama.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Tokenize converts text to token ids with the model's tokenizer. addBOS adds
// the model's beginning-of-sequence token when the model uses one. Special
// tokens written in the text (e.g. "<|im_start|>") are parsed as such.
func (m *Model) Tokenize(text string, addBOS bool) ([]int32, error) {
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	n := len(text) + 2
	for range 2 {
		out := make([]int32, n)
		got := C.llama_tokenize(m.vocab, ct, C.int32_t(len(text)), (*C.llama_token)(unsafe.Pointer(&out[0])),
			C.int32_t(n), C.bool(addBOS), C.bool(true))
		if got >= 0 {
			return out[:got], nil
		}
		if got == C.INT32_MIN {
			return nil, fmt.Errorf("tokenize: text of %d bytes overflows int32 tokens", len(text))
		}
		n = int(-got)
	}
	return nil, fmt.Errorf("tokenize: llama.cpp kept asking for a larger buffer")
}

// TokenToPiece returns the text of one token (special tokens rendered).
func (m *Model) TokenToPiece(tok int32) (string, error) {
	if tok < 0 || int(tok) >= m.info.Vocab {
		return "", fmt.Errorf("token %d outside the vocabulary [0, %d)", tok, m.info.Vocab)
	}
	buf := make([]byte, 64)
	for range 2 {
		n := C.llama_token_to_piece(m.vocab, C.llama_token(tok), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf)), 0, C.bool(true))
		if n >= 0 {
			return string(buf[:n]), nil
		}
		buf = make([]byte, int(-n))
	}
	return "", fmt.Errorf("token %d: llama.cpp kept asking for a larger buffer", tok)
}

// IsEOG reports whether tok ends generation (end of sequence or turn).
func (m *Model) IsEOG(tok int32) bool { return bool(C.llama_vocab_is_eog(m.vocab, C.llama_token(tok))) }
