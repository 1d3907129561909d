package gguf

import (
	"testing"

	"github.com/lessim/lessim/devices"
)

// withKV is f with one more metadata pair (or key's value replaced).
func withKV(f *File, key string, typ ValueType, v any) {
	if i, ok := f.kvIndex[key]; ok {
		f.KVs[i] = KV{Key: key, Type: typ, Value: v}
		return
	}
	f.kvIndex[key] = len(f.KVs)
	f.KVs = append(f.KVs, KV{Key: key, Type: typ, Value: v})
}

// TestModelSpecMixers: a file whose blocks are all full attention states
// each layer's mixer (TestModelSpecSynthetic pins the values); one that may
// not be (a state-space key, a full-attention interval, sliding windows,
// compressed latent attention, head counts per block) states none, so the
// simulator refuses its context cost instead of charging a wrong one. A
// layer charged for two blocks gets twice one block's.
func TestModelSpecMixers(t *testing.T) {
	tiny := func() *File {
		f, err := parseBytes(synthBytes(t, tinyOptions()), "tiny.gguf")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for name, mut := range map[string]func(*File){
		"ssm":              func(f *File) { withKV(f, "qwen3moe.ssm.conv_kernel", TypeUint32, uint32(4)) },
		"hybrid interval":  func(f *File) { withKV(f, "qwen3moe.full_attention_interval", TypeUint32, uint32(4)) },
		"sliding window":   func(f *File) { withKV(f, "qwen3moe.attention.sliding_window", TypeUint32, uint32(128)) },
		"latent attention": func(f *File) { withKV(f, "qwen3moe.attention.kv_lora_rank", TypeUint32, uint32(512)) },
		"kv heads per block": func(f *File) {
			withKV(f, "qwen3moe.attention.head_count_kv", TypeArray, Array{Elem: TypeUint32, Values: []uint32{2, 0}})
		},
		"no heads": func(f *File) { delete(f.kvIndex, "qwen3moe.attention.head_count") },
	} {
		f := tiny()
		mut(f)
		s, err := f.ModelSpec()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.HasContextShape() || s.Layers[0].Mixer != "" || s.Layers[1].KVBytesPerToken != 0 {
			t.Errorf("%s: layers state a mixer: %+v", name, s.Layers[0])
		}
	}
	f := tiny()
	s, err := f.ModelSpec()
	if err != nil || !s.HasContextShape() {
		t.Fatalf("full attention: %v, context shape %v", err, s.HasContextShape())
	}
	s.Layers[0].Mixer, s.Layers[1].Mixer = "", ""
	f.stateMixers(s, []int64{2, 1})
	if l := s.Layers[0]; l.Mixer != devices.MixerAttention || l.KVBytesPerToken != 2*128 || l.AttnFLOPsPerPosition != 2*256 {
		t.Errorf("a layer of two blocks: %+v", l)
	}
}
