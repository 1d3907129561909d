package gguf

import "fmt"

// Token types of llama.cpp (enum llama_token_type in llama-vocab.h's public header).
const (
	tokNormal  int32 = 1
	tokUnknown int32 = 2
	tokControl int32 = 3
	tokByte    int32 = 6
)

// synthWords are common English words added as "▁word" pieces so prompts tokenize
// into a mix of whole words, characters and byte fallbacks.
var synthWords = []string{
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "on",
	"be", "by", "at", "this", "are", "from", "or", "an", "have", "not", "which", "but",
	"one", "all", "were", "they", "we", "you", "he", "she", "can", "will", "there", "more",
	"model", "expert", "layer", "phone", "memory", "flash", "token", "time", "speed",
}

// synthVocab builds a SentencePiece-style ("llama") vocabulary of n tokens:
// <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, "▁", the printable ASCII
// characters, "▁"+word pieces, "▁"+letter, then two-letter pieces until n.
// Scores rank pieces (earlier is preferred when merging); n ≥ minVocab.
func synthVocab(n int) (tokens []string, scores []float32, types []int32) {
	add := func(tok string, score float32, typ int32) {
		tokens = append(tokens, tok)
		scores = append(scores, score)
		types = append(types, typ)
	}
	add("<unk>", 0, tokUnknown)
	add("<s>", 0, tokControl)
	add("</s>", 0, tokControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 0, tokByte)
	}
	seen := map[string]bool{}
	var pieces []string
	piece := func(p string) {
		if !seen[p] {
			seen[p] = true
			pieces = append(pieces, p)
		}
	}
	const space = "\u2581"
	piece(space)
	for c := byte(0x21); c < 0x7f; c++ {
		piece(string(c))
	}
	for _, w := range synthWords {
		piece(space + w)
	}
	letters := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for _, c := range letters {
		piece(space + string(c))
	}
	for _, a := range letters[:26] {
		for _, b := range letters[:26] {
			piece(string(a) + string(b))
		}
	}
	for i := 0; len(tokens) < n; i++ {
		p := fmt.Sprintf("%s<%d>", space, i)
		if i < len(pieces) {
			p = pieces[i]
		}
		add(p, -float32(i+1), tokNormal)
	}
	return tokens, scores, types
}
