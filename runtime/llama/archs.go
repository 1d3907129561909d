package llama

import "slices"

// moeArchitectures are the general.architecture values whose graph builder in
// the bundled llama.cpp (ollama v0.17.4, src/models/*.cpp) routes tokens through
// build_moe_ffn, i.e. emits the ffn_moe_* tensors the capture reads, and that
// decode causally. "llama", "llama4", "mistral3", "granitehybrid" and "jamba"
// are MoE only when the file has expert tensors (Mixtral is "llama"); the
// recorder checks for router tensors separately. Left out on purpose: the
// encoder nomic-bert-moe and the diffusion models llada-moe and rnd1.
// Reference: llama/llama.cpp/src/llama-arch.cpp (names), llama-model.cpp (builders).
var moeArchitectures = []string{
	"afmoe", "arctic", "bailingmoe", "bailingmoe2", "dbrx", "deepseek", "deepseek2",
	"dots1", "ernie4_5-moe", "glm4moe", "gpt-oss", "granitehybrid", "granitemoe", "grok",
	"grovemoe", "hunyuan-moe", "jamba", "lfm2moe", "llama", "llama4", "minimax-m2",
	"mistral3", "nemotron_h_moe", "olmoe", "phimoe", "qwen2moe", "qwen3moe", "qwen3next",
	"qwen3vlmoe", "smallthinker",
}

// MoEArchitectures returns the supported MoE architecture names, sorted.
func MoEArchitectures() []string { return slices.Clone(moeArchitectures) }

// IsMoEArchitecture reports whether arch is in MoEArchitectures.
func IsMoEArchitecture(arch string) bool {
	_, ok := slices.BinarySearch(moeArchitectures, arch)
	return ok
}
