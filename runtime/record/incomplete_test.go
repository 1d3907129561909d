//go:build llamacpp

package record

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordIncompleteModel: a header that passes CheckModel but lacks the
// tensors llama.cpp needs is refused with an error, not a crash.
func TestRecordIncompleteModel(t *testing.T) {
	kv := map[string]uint32{"expert_count": 4, "expert_used_count": 2, "embedding_length": 8, "block_count": 1,
		"context_length": 64, "attention.head_count": 2, "expert_feed_forward_length": 4}
	path := writeGGUF(t, "qwen3moe", kv, map[string][]int64{
		"blk.0.ffn_gate_exps.weight": {8, 4, 4},
		"blk.0.ffn_up_exps.weight":   {8, 4, 4},
		"blk.0.ffn_down_exps.weight": {4, 8, 4},
		"blk.0.ffn_gate_inp.weight":  {8, 4},
	})
	o := DefaultOptions()
	o.ModelPath, o.Out = path, filepath.Join(t.TempDir(), "t.parquet")
	o.LookaheadDepth = 0 // one MoE layer: nothing to look ahead to
	_, err := Record(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "llama.cpp refused") {
		t.Fatalf("Record: %v, want llama.cpp's refusal", err)
	}
	t.Log(err)
}
