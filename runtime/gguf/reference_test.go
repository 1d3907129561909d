package gguf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// virtualFile serves a captured header and zeros after it, so a test can parse the
// directory of a multi-gigabyte model without writing it.
type virtualFile struct{ head []byte }

func (v virtualFile) ReadAt(p []byte, off int64) (int, error) {
	for i := range p {
		if j := off + int64(i); j < int64(len(v.head)) {
			p[i] = v.head[j]
		} else {
			p[i] = 0
		}
	}
	return len(p), nil
}

var errHeaderCaptured = errors.New("header captured")

// headWriter keeps the first bytes of a write and then stops it.
type headWriter struct {
	buf []byte
	max int
}

func (h *headWriter) Write(p []byte) (int, error) {
	if len(h.buf)+len(p) > h.max {
		return 0, errHeaderCaptured
	}
	h.buf = append(h.buf, p...)
	return len(p), nil
}

// qwen3_30bQ4KM writes the directory of two blocks of Qwen3-30B-A3B as Q4_K_M
// quantizes them (hidden 2048, 32 heads × 128, 4 KV heads, 128 experts of FFN 768):
// block 0 with attn_v and ffn_down_exps in Q6_K (llama.cpp's "more bits" layers),
// block 1 with both in Q4_K; everything else Q4_K, norms and router F32.
func qwen3_30bQ4KM(t *testing.T) *File {
	t.Helper()
	const q4k, q6k = TypeID(12), TypeID(14)
	w := NewWriter()
	must(t, w.AddKV("general.architecture", "qwen3moe"))
	must(t, w.AddKV("qwen3moe.block_count", uint32(2)))
	must(t, w.AddKV("qwen3moe.expert_count", uint32(128)))
	must(t, w.AddKV("qwen3moe.expert_used_count", uint32(8)))
	must(t, w.AddKV("qwen3moe.embedding_length", uint32(2048)))
	zeros := func(io.Writer) error { return errHeaderCaptured } // stop after the header
	add := func(name string, typ TypeID, dims ...int64) { must(t, w.AddTensorFunc(name, typ, dims, zeros)) }
	for b, more := range []TypeID{q6k, q4k} {
		p := fmt.Sprintf("blk.%d.", b)
		add(p+"attn_norm.weight", TypeF32, 2048)
		add(p+"attn_q.weight", q4k, 2048, 4096)
		add(p+"attn_k.weight", q4k, 2048, 512)
		add(p+"attn_v.weight", more, 2048, 512)
		add(p+"attn_output.weight", q4k, 4096, 2048)
		add(p+"attn_q_norm.weight", TypeF32, 128)
		add(p+"attn_k_norm.weight", TypeF32, 128)
		add(p+"ffn_norm.weight", TypeF32, 2048)
		add(p+"ffn_gate_inp.weight", TypeF32, 2048, 128)
		add(p+"ffn_gate_exps.weight", q4k, 2048, 768, 128)
		add(p+"ffn_up_exps.weight", q4k, 2048, 768, 128)
		add(p+"ffn_down_exps.weight", more, 768, 2048, 128)
	}
	hw := &headWriter{max: 1 << 16}
	if _, err := w.WriteTo(hw); !errors.Is(err, errHeaderCaptured) {
		t.Fatalf("capturing the header: %v", err)
	}
	f, err := Parse(virtualFile{hw.buf}, 1<<40, "Qwen3-30B-A3B-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestQwen3_30BBytes checks expert and dense bytes against the per-layer figures a
// real engine logged for Qwen3-30B-A3B-Q4_K_M.gguf.
// Reference: BigMoeOnEdge route trace (github.com/Helldez/BigMoeOnEdge,
// docs/bench-data/2026-07-15-route-trace/, Apache-2.0), preamble of qwen.route.csv:
// expert_bytes 3059712 / dense_bytes 11953152 on Q6_K layers, 2654208 / 11682816 on
// the others.
func TestQwen3_30BBytes(t *testing.T) {
	s, err := qwen3_30bQ4KM(t).ModelSpec()
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int64{{3059712, 11953152}, {2654208, 11682816}}
	for i, l := range s.Layers {
		if got := [2]int64{l.ExpertBytes, l.DenseBytes}; got != want[i] {
			t.Errorf("block %d: expert, dense bytes %v, want %v", l.Block, got, want[i])
		}
	}
	// The same pairs, read from the reference trace when it is present.
	path := filepath.Join("..", "..", "..", "shared", "reference", "traces", "qwen.route.csv")
	fh, err := os.Open(path)
	if err != nil {
		t.Logf("reference trace absent (%v); checked the constants only", err)
		return
	}
	defer fh.Close()
	seen := map[[2]int64]int{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "# layer=") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			continue
		}
		var layer int
		var pair [2]int64
		if _, err := fmt.Sscanf(line, "# layer=%d expert_bytes=%d dense_bytes=%d", &layer, &pair[0], &pair[1]); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		seen[pair]++
	}
	if len(seen) != 2 || seen[want[0]] == 0 || seen[want[1]] == 0 {
		t.Errorf("%s: per-layer (expert, dense) bytes %v, want only %v", path, seen, want)
	}
}
