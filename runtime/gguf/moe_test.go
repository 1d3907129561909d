package gguf

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lessim/lessim/devices"
)

func TestMoEByteRanges(t *testing.T) {
	o := tinyOptions()
	f, err := parseBytes(synthBytes(t, o), "tiny.gguf")
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	if m.Arch != "qwen3moe" || m.Blocks != 2 || m.Experts != 8 || m.TopK != 2 || m.Hidden != 64 || m.ExpertFFN != 32 || m.SharedExperts != 0 {
		t.Errorf("shape %+v", m)
	}
	if len(m.Layers) != 2 {
		t.Fatalf("%d layers", len(m.Layers))
	}
	// One expert of gate/up/down, each 64×32 Q8_0 weights: 2048/32·34 = 2176 bytes.
	const perTensor = 2176
	for li, l := range m.Layers {
		if l.Block != li || l.Router != "blk."+string(rune('0'+li))+".ffn_gate_inp.weight" {
			t.Errorf("layer %d: block %d router %q", li, l.Block, l.Router)
		}
		kinds := []string{}
		for _, s := range l.Tensors {
			kinds = append(kinds, s.Kind)
			ti, _ := f.Tensor(s.Tensor)
			if s.ExpertBytes != perTensor || s.Offset != ti.FileOffset || s.Type != TypeQ8_0 || s.Elements != 64*32 {
				t.Errorf("%s: %+v", s.Tensor, s)
			}
			// The experts tile the tensor exactly, in order.
			next := ti.FileOffset
			for e := range m.Experts {
				start, end := s.Range(e)
				if start != next || end-start != perTensor {
					t.Errorf("%s expert %d: [%d, %d), want start %d", s.Tensor, e, start, end, next)
				}
				next = end
			}
			if next != ti.End() {
				t.Errorf("%s: experts end at %d, tensor at %d", s.Tensor, next, ti.End())
			}
		}
		if !reflect.DeepEqual(kinds, []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
			t.Errorf("layer %d kinds %v", li, kinds)
		}
		if l.ExpertBytes() != 3*perTensor {
			t.Errorf("layer %d expert bytes %d", li, l.ExpertBytes())
		}
		r := l.ExpertRanges(5)
		if len(r) != 3 || r[0].Start != l.Tensors[0].Offset+5*perTensor || r[2].End != l.Tensors[2].Offset+6*perTensor {
			t.Errorf("expert 5 ranges %v", r)
		}
	}
}

func TestModelSpecSynthetic(t *testing.T) {
	o := tinyOptions()
	f, err := parseBytes(synthBytes(t, o), "dir/tiny.gguf")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.ModelSpec()
	if err != nil {
		t.Fatal(err)
	}
	q8 := func(n int64) int64 { return n / 32 * 34 }
	h, v, qd, kvd := int64(64), int64(minVocab), int64(4*16), int64(2*16)
	dense := 2*4*h + q8(h*qd) + 2*q8(h*kvd) + q8(qd*h) + 2*4*16 + 4*h*8 // attn/ffn norms, q, k, v, o, q/k norms, router
	denseElems := h + h*qd + 2*h*kvd + qd*h + 2*16 + h + h*8
	want := &devices.ModelSpec{
		Name: "lessim-synth-qwen3moe-2x8-top2", Arch: "qwen3moe", Variant: "q8_0",
		Blocks: 2, Experts: 8, TopK: 2, Hidden: 64, ExpertFFN: 32, Vocab: minVocab,
		NonExpertBytes: 2*q8(h*v) + 4*h + 2*dense,
		HeadBytes:      q8(h * v), HeadFLOPsPerToken: 2 * h * v, HeadType: "Q8_0",
		KVBytesPerToken: 2 * 2 * (16 + 16) * 2,
		Source:          "gguf:tiny.gguf",
	}
	for b := range 2 {
		want.Layers = append(want.Layers, devices.LayerSpec{
			Block: b, ExpertBytes: 3 * 2176,
			Tensors: []devices.ExpertTensor{
				{Name: "ffn_gate_exps", Type: "Q8_0", Bytes: 2176},
				{Name: "ffn_up_exps", Type: "Q8_0", Bytes: 2176},
				{Name: "ffn_down_exps", Type: "Q8_0", Bytes: 2176},
			},
			DenseBytes: dense, DenseFLOPsPerToken: 2 * denseElems, ExpertFLOPsPerToken: 2 * 3 * 64 * 32,
			// By type, in file order: the norms first (F32), the router F32 too.
			DenseTypes: []devices.TypeBytes{{Type: "F32", Bytes: 2*4*h + 2*4*16 + 4*h*8}, {Type: "Q8_0", Bytes: q8(h*qd) + 2*q8(h*kvd) + q8(qd*h)}},
			// Full attention, 4 heads and 2 KV heads of 16: K and V at
			// F16 per position, 4 × heads × head_dim FLOPs per position.
			Mixer: devices.MixerAttention, KVBytesPerToken: 2 * (16 + 16) * 2, AttnFLOPsPerPosition: 4 * 4 * 16,
		})
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("ModelSpec\n got %+v\nwant %+v", s, want)
	}
	var total int64
	for _, ti := range f.Tensors {
		total += ti.Bytes
	}
	if s.NonExpertBytes+s.TotalExpertBytes() != total {
		t.Errorf("non-expert %d + experts %d != all tensors %d", s.NonExpertBytes, s.TotalExpertBytes(), total)
	}
}

// TestModelSpecOtherLayouts covers what real files have and synthetic ones lack: a
// leading dense block, a shared expert, fused gate+up experts, per-expert biases, a
// tied output head and a per-layer head_count_kv array.
func TestModelSpecOtherLayouts(t *testing.T) {
	w := NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "deepseek2"}, {"deepseek2.block_count", uint32(2)},
		{"deepseek2.expert_count", uint32(4)}, {"deepseek2.expert_used_count", uint32(2)},
		{"deepseek2.embedding_length", uint32(32)}, {"deepseek2.attention.head_count", uint32(2)},
		{"deepseek2.attention.head_count_kv", []int32{1, 1}},
	} {
		must(t, w.AddKV(kv.k, kv.v))
	}
	f32 := func(name string, dims ...int64) {
		n, _ := TensorSize(TypeF32, dims)
		must(t, w.AddTensor(name, TypeF32, dims, make([]byte, n)))
	}
	f32("token_embd.weight", 32, 10)
	f32("blk.0.ffn_up.weight", 32, 64) // dense lead block
	f32("blk.1.ffn_gate_inp.weight", 32, 4)
	f32("blk.1.ffn_gate_up_exps.weight", 32, 16, 4)
	f32("blk.1.ffn_gate_up_exps.bias", 16, 4)
	f32("blk.1.ffn_down_exps.weight", 8, 32, 4)
	f32("blk.1.ffn_up_shexp.weight", 32, 8)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := parseBytes(buf.Bytes(), "ds.gguf")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.ModelSpec()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Layers) != 1 || s.Layers[0].Block != 1 || s.SharedExperts != 1 || s.Blocks != 2 {
		t.Fatalf("spec %+v", s)
	}
	l := s.Layers[0]
	wantTensors := []devices.ExpertTensor{
		{Name: "ffn_gate_up_exps", Type: "F32", Bytes: 32 * 16 * 4},
		{Name: "ffn_gate_up_exps.bias", Type: "F32", Bytes: 16 * 4},
		{Name: "ffn_down_exps", Type: "F32", Bytes: 8 * 32 * 4},
	}
	if !reflect.DeepEqual(l.Tensors, wantTensors) || l.ExpertBytes != (512+16+256)*4 {
		t.Errorf("tensors %+v, expert bytes %d", l.Tensors, l.ExpertBytes)
	}
	// Block 0's dense FFN is charged to the first MoE layer with block 1's router and shared expert.
	if want := int64(32*64+32*4+32*8) * 4; l.DenseBytes != want {
		t.Errorf("dense bytes %d, want %d", l.DenseBytes, want)
	}
	if s.HeadBytes != 32*10*4 || s.NonExpertBytes != int64(32*10+32*64+32*4+32*8)*4 {
		t.Errorf("head %d non-expert %d", s.HeadBytes, s.NonExpertBytes)
	}
	if s.KVBytesPerToken != 2*1*(16+16)*2 {
		t.Errorf("kv bytes per token %d", s.KVBytesPerToken)
	}
}

func TestModelSpecMissingTopK(t *testing.T) {
	w := NewWriter()
	must(t, w.AddKV("general.architecture", "olmoe"))
	must(t, w.AddTensor("blk.0.ffn_up_exps.weight", TypeF32, []int64{4, 2, 3}, make([]byte, 96)))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := parseBytes(buf.Bytes(), "o.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := f.MoE(); err != nil || m.Experts != 3 || m.ExpertFFN != 2 || m.Hidden != 0 {
		t.Errorf("MoE without expert_count: %+v %v", m, err)
	}
	if _, err := f.ModelSpec(); err == nil || err.Error() != "o.gguf: olmoe.expert_used_count is missing" {
		t.Errorf("ModelSpec: %v", err)
	}
}

func TestMoEExpertCountMismatch(t *testing.T) {
	for _, tt := range []struct {
		name  string
		count uint32 // 0: no expert_count key
		want  string
	}{
		{"key", 4, "m.gguf: tensor blk.0.ffn_up_exps.weight has 3 experts in its last dimension, olmoe.expert_count has 4"},
		{"inferred", 0, "m.gguf: tensor blk.1.ffn_up_exps.weight has 2 experts in its last dimension, tensor blk.0.ffn_up_exps.weight has 3"},
	} {
		w := NewWriter()
		must(t, w.AddKV("general.architecture", "olmoe"))
		if tt.count > 0 {
			must(t, w.AddKV("olmoe.expert_count", tt.count))
		}
		must(t, w.AddTensor("token_embd.weight", TypeF32, []int64{4, 2}, make([]byte, 32)))
		must(t, w.AddTensor("blk.0.ffn_up_exps.weight", TypeF32, []int64{4, 2, 3}, make([]byte, 96)))
		must(t, w.AddTensor("blk.1.ffn_up_exps.weight", TypeF32, []int64{4, 2, 2}, make([]byte, 64)))
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		f, err := parseBytes(buf.Bytes(), "m.gguf")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.MoE(); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v\nwant %s", tt.name, err, tt.want)
		}
	}
}
