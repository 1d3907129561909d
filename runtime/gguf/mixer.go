package gguf

import (
	"strings"

	"github.com/lessim/lessim/devices"
)

// otherMixerKeys mark a model whose blocks are not all full grouped-query
// attention with an F16 KV cache of K and V per position: recurrent or
// state-space blocks (ssm), hybrids that interleave them (a full-attention
// interval), sliding-window attention (a bounded cache) and compressed
// latent attention (deepseek2's kv_lora_rank). Their context cost is not
// derived from the file.
var otherMixerKeys = []string{".ssm.", ".full_attention_interval", ".attention.sliding_window", ".attention.kv_lora_rank"}

// attentionMixer is one block's mixer when every block of the file is full
// attention (see otherMixerKeys): K and V of heads_kv × (key_length +
// value_length) per position at 2 bytes, and 2 × heads × (key_length +
// value_length) FLOPs per token per position (q·k scores and the weighted
// sum of v, a multiply-add = 2 FLOPs; devices.AttentionMixer when key and
// value lengths are equal). ok is false when the file does not say so or
// states the head counts per block.
func (f *File) attentionMixer(arch string, hidden int) (devices.MixerShape, bool) {
	for _, kv := range f.KVs {
		for _, k := range otherMixerKeys {
			if strings.HasPrefix(kv.Key, arch+".") && strings.Contains(kv.Key, k) {
				return devices.MixerShape{}, false
			}
		}
	}
	heads, ok := f.Uint(arch + ".attention.head_count")
	if !ok || heads == 0 {
		return devices.MixerShape{}, false
	}
	headsKV := heads
	if _, present := f.kv(arch + ".attention.head_count_kv"); present {
		if headsKV, ok = f.Uint(arch + ".attention.head_count_kv"); !ok || headsKV == 0 {
			return devices.MixerShape{}, false // per block, or zero (no cache)
		}
	}
	keyLen, okK := f.Uint(arch + ".attention.key_length")
	valLen, okV := f.Uint(arch + ".attention.value_length")
	if !okK {
		keyLen = uint64(hidden) / heads
	}
	if !okV {
		valLen = uint64(hidden) / heads
	}
	if keyLen == 0 || valLen == 0 {
		return devices.MixerShape{}, false
	}
	return devices.MixerShape{Mixer: devices.MixerAttention,
		KVBytesPerToken:      int64(headsKV*(keyLen+valLen)) * kvCacheBytesPerValue,
		AttnFLOPsPerPosition: 2 * int64(heads*(keyLen+valLen))}, true
}

// stateMixers gives every layer of spec its attention mixer, times the
// blocks it is charged for (blocks[i]: a dense block is charged to the next
// MoE layer, see ModelSpec), when the file has one (attentionMixer);
// otherwise the layers state none, and --context-cost is refused on them.
func (f *File) stateMixers(spec *devices.ModelSpec, blocks []int64) {
	mx, ok := f.attentionMixer(spec.Arch, spec.Hidden)
	if !ok {
		return
	}
	for i := range spec.Layers {
		l := &spec.Layers[i]
		l.Mixer, l.KVBytesPerToken, l.AttnFLOPsPerPosition = mx.Mixer, blocks[i]*mx.KVBytesPerToken, blocks[i]*mx.AttnFLOPsPerPosition
	}
}
