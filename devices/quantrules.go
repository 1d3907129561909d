package devices

// useMoreBits is llama.cpp's use_more_bits(i, n) (src/llama-quant.cpp), the
// rule Q4_K_M uses to give layer i of n a Q6_K ffn_down (and attn_v):
// i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2. For n = 40 it selects blocks
// 0–4, 7, 10, …, 34 and 35–39, the 20 layers DESIGN.md lists; for n = 48,
// blocks 0–5, 8, 11, …, 41 and 42–47, as the Qwen3-30B-A3B Q4_K_M reference
// trace's expert sizes show.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// q4KMExperts returns the Q4_K_M expert types of an n-layer model: Q4_K gate
// and up everywhere, Q6_K down on useMoreBits layers.
func q4KMExperts(n int) (def ExpertQuant, byBlock map[int]ExpertQuant) {
	byBlock = map[int]ExpertQuant{}
	for b := range n {
		if useMoreBits(b, n) {
			byBlock[b] = ExpertQuant{"Q4_K", "Q4_K", "Q6_K"}
		}
	}
	return Uniform("Q4_K"), byBlock
}
