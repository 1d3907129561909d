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

// attentionShape is a block's attention as the file states it: query and
// key/value heads (the largest, when stated per block) and key and value
// lengths per head (hidden ÷ heads when not stated).
type attentionShape struct{ heads, headsKV, keyLen, valLen uint64 }

// attention reads the file's attention shape.
func (f *File) attention(arch string, hidden int) attentionShape {
	heads, _ := f.uintOrMax(arch + ".attention.head_count")
	headsKV, ok := f.uintOrMax(arch + ".attention.head_count_kv")
	if !ok {
		headsKV = heads
	}
	keyLen, okK := f.Uint(arch + ".attention.key_length")
	valLen, okV := f.Uint(arch + ".attention.value_length")
	if heads > 0 {
		if !okK {
			keyLen = uint64(hidden) / heads
		}
		if !okV {
			valLen = uint64(hidden) / heads
		}
	}
	return attentionShape{heads, headsKV, keyLen, valLen}
}

// kvBytes is one block's F16 cache of K and V per context position.
func (a attentionShape) kvBytes() int64 {
	return int64(a.headsKV*(a.keyLen+a.valLen)) * kvCacheBytesPerValue
}

// attentionMixer is one block's mixer when every block of the file is full
// attention (see otherMixerKeys): its K and V bytes per position (kvBytes),
// and 2 × heads × (key_length + value_length) FLOPs per token per position
// (q·k scores and the weighted sum of v, a multiply-add = 2 FLOPs;
// devices.AttentionMixer when key and value lengths are equal). ok is false
// when the file does not say so or states the head counts per block.
func (f *File) attentionMixer(arch string, hidden int) (devices.MixerShape, bool) {
	for _, kv := range f.KVs {
		for _, k := range otherMixerKeys {
			if strings.HasPrefix(kv.Key, arch+".") && strings.Contains(kv.Key, k) {
				return devices.MixerShape{}, false
			}
		}
	}
	if h, ok := f.Uint(arch + ".attention.head_count"); !ok || h == 0 {
		return devices.MixerShape{}, false
	}
	if _, present := f.kv(arch + ".attention.head_count_kv"); present {
		if h, ok := f.Uint(arch + ".attention.head_count_kv"); !ok || h == 0 {
			return devices.MixerShape{}, false // per block, or zero (no cache)
		}
	}
	a := f.attention(arch, hidden)
	if a.keyLen == 0 || a.valLen == 0 {
		return devices.MixerShape{}, false
	}
	return devices.MixerShape{Mixer: devices.MixerAttention, KVBytesPerToken: a.kvBytes(),
		AttnFLOPsPerPosition: 2 * int64(a.heads*(a.keyLen+a.valLen))}, true
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
