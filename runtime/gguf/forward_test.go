package gguf

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// refModel is a deliberately plain float32 forward pass of a qwen3moe GGUF (as in
// llama.cpp's models/qwen3moe.cpp: RMS norms, q/k norms, NEOX RoPE, grouped-query
// causal attention, softmax top-k routing with renormalized weights, SiLU experts).
// Tests use it to measure what the synthetic models' routing looks like.
type refModel struct {
	hidden, layers, experts, topK, heads, headsKV, headDim, ffn int
	eps, ropeBase                                               float64
	embd                                                        []float32
	blk                                                         []refBlock
}

type refBlock struct {
	attnNorm, q, k, v, o, qNorm, kNorm, ffnNorm, router []float32
	gate, up, down                                      []float32
}

func loadRef(t testing.TB, f *File) *refModel {
	t.Helper()
	u := func(k string) int {
		v, ok := f.Uint("qwen3moe." + k)
		if !ok {
			t.Fatalf("missing qwen3moe.%s", k)
		}
		return int(v)
	}
	fl := func(k string) float64 {
		v, ok := f.Float("qwen3moe." + k)
		if !ok {
			t.Fatalf("missing qwen3moe.%s", k)
		}
		return v
	}
	read := func(name string) []float32 {
		xs, err := f.ReadTensorF32(name)
		if err != nil {
			t.Fatal(err)
		}
		return xs
	}
	m := &refModel{
		hidden: u("embedding_length"), layers: u("block_count"), experts: u("expert_count"),
		topK: u("expert_used_count"), heads: u("attention.head_count"), headsKV: u("attention.head_count_kv"),
		headDim: u("attention.key_length"), ffn: u("expert_feed_forward_length"),
		eps: fl("attention.layer_norm_rms_epsilon"), ropeBase: fl("rope.freq_base"),
		embd: read("token_embd.weight"),
	}
	for l := range m.layers {
		n := func(s string) []float32 { return read(fmt.Sprintf("blk.%d.%s.weight", l, s)) }
		m.blk = append(m.blk, refBlock{
			attnNorm: n("attn_norm"), q: n("attn_q"), k: n("attn_k"), v: n("attn_v"), o: n("attn_output"),
			qNorm: n("attn_q_norm"), kNorm: n("attn_k_norm"), ffnNorm: n("ffn_norm"), router: n("ffn_gate_inp"),
			gate: n("ffn_gate_exps"), up: n("ffn_up_exps"), down: n("ffn_down_exps"),
		})
	}
	return m
}

// matvec computes y = W·x for W stored ggml-style with ne0 = len(x) (row r contiguous).
func matvec(w, x []float32, rows int) []float32 {
	n := len(x)
	y := make([]float32, rows)
	for r := range rows {
		var s float32
		row := w[r*n : (r+1)*n]
		for i, v := range row {
			s += v * x[i]
		}
		y[r] = s
	}
	return y
}

func rmsNorm(x, w []float32, eps float64) []float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	sc := float32(1 / math.Sqrt(ss/float64(len(x))+eps))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v * sc * w[i]
	}
	return out
}

// ropeNeox rotates pairs (i, i+d/2) of one head vector by pos·base^(−2i/d).
func ropeNeox(x []float32, pos int, base float64) {
	d := len(x)
	for i := range d / 2 {
		th := float64(pos) * math.Pow(base, -2*float64(i)/float64(d))
		c, s := float32(math.Cos(th)), float32(math.Sin(th))
		a, b := x[i], x[i+d/2]
		x[i], x[i+d/2] = a*c-b*s, a*s+b*c
	}
}

func topK(logits []float32, k int) []int {
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	return idx[:k]
}

// refTrace is what a recorder sees per token and layer: the router input (ffn_norm
// output) and the selected experts.
type refTrace struct {
	routerIn [][]float32 // [layer]
	topk     [][]int     // [layer]
}

// run decodes tokens one at a time with a KV cache and returns each token's trace.
func (m *refModel) run(tokens []int) []refTrace {
	kvDim := m.headsKV * m.headDim
	keys := make([][][]float32, m.layers) // [layer][pos] → kvDim
	vals := make([][][]float32, m.layers)
	var out []refTrace
	for pos, tok := range tokens {
		h := slices.Clone(m.embd[tok*m.hidden : (tok+1)*m.hidden])
		tr := refTrace{}
		for l, b := range m.blk {
			x := rmsNorm(h, b.attnNorm, m.eps)
			q := matvec(b.q, x, m.heads*m.headDim)
			k := matvec(b.k, x, kvDim)
			v := matvec(b.v, x, kvDim)
			for hd := range m.heads {
				qh := q[hd*m.headDim : (hd+1)*m.headDim]
				copy(qh, rmsNorm(qh, b.qNorm, m.eps))
				ropeNeox(qh, pos, m.ropeBase)
			}
			for hd := range m.headsKV {
				kh := k[hd*m.headDim : (hd+1)*m.headDim]
				copy(kh, rmsNorm(kh, b.kNorm, m.eps))
				ropeNeox(kh, pos, m.ropeBase)
			}
			keys[l] = append(keys[l], k)
			vals[l] = append(vals[l], v)
			att := make([]float32, m.heads*m.headDim)
			group := m.heads / m.headsKV
			for hd := range m.heads {
				kvh := hd / group
				qh := q[hd*m.headDim : (hd+1)*m.headDim]
				scores := make([]float64, pos+1)
				mx := math.Inf(-1)
				for p := range pos + 1 {
					var s float64
					kp := keys[l][p][kvh*m.headDim:]
					for i, qv := range qh {
						s += float64(qv * kp[i])
					}
					scores[p] = s / math.Sqrt(float64(m.headDim))
					mx = max(mx, scores[p])
				}
				var z float64
				for p := range scores {
					scores[p] = math.Exp(scores[p] - mx)
					z += scores[p]
				}
				ah := att[hd*m.headDim : (hd+1)*m.headDim]
				for p := range scores {
					vp := vals[l][p][kvh*m.headDim:]
					w := float32(scores[p] / z)
					for i := range ah {
						ah[i] += w * vp[i]
					}
				}
			}
			ao := matvec(b.o, att, m.hidden)
			for i := range h {
				h[i] += ao[i]
			}
			xn := rmsNorm(h, b.ffnNorm, m.eps)
			logits := matvec(b.router, xn, m.experts)
			sel := topK(logits, m.topK)
			tr.routerIn = append(tr.routerIn, xn)
			tr.topk = append(tr.topk, sel)
			// softmax over all experts, keep top-k, renormalize (norm_w = true).
			mx := logits[sel[0]]
			var z float64
			ws := make([]float64, len(sel))
			for i, e := range sel {
				ws[i] = math.Exp(float64(logits[e] - mx))
				z += ws[i]
			}
			moe := make([]float32, m.hidden)
			per := m.hidden * m.ffn
			for i, e := range sel {
				g := matvec(b.gate[e*per:(e+1)*per], xn, m.ffn)
				u := matvec(b.up[e*per:(e+1)*per], xn, m.ffn)
				for j := range g {
					g[j] = g[j] / (1 + float32(math.Exp(float64(-g[j])))) * u[j]
				}
				d := matvec(b.down[e*per:(e+1)*per], g, m.hidden)
				w := float32(ws[i] / z)
				for j := range moe {
					moe[j] += w * d[j]
				}
			}
			for i := range h {
				h[i] += moe[i]
			}
		}
		out = append(out, tr)
	}
	return out
}

// lookaheadRecall is the fraction of layer l+1's selected experts found in the top-k of
// layer l+1's router applied to layer l's router input, over all tokens and layers.
func (m *refModel) lookaheadRecall(trs []refTrace) float64 {
	var hit, total int
	for _, tr := range trs {
		for l := 0; l+1 < m.layers; l++ {
			pred := topK(matvec(m.blk[l+1].router, tr.routerIn[l], m.experts), m.topK)
			for _, e := range tr.topk[l+1] {
				if slices.Contains(pred, e) {
					hit++
				}
				total++
			}
		}
	}
	return float64(hit) / float64(total)
}

// sameLayerIndexOverlap is the fraction of layer l+1's experts that layer l also chose
// (same expert index), the effect of router sharing.
func (m *refModel) sameIndexOverlap(trs []refTrace) float64 {
	var hit, total int
	for _, tr := range trs {
		for l := 0; l+1 < m.layers; l++ {
			for _, e := range tr.topk[l+1] {
				if slices.Contains(tr.topk[l], e) {
					hit++
				}
				total++
			}
		}
	}
	return float64(hit) / float64(total)
}

// nextTokenReuse is the fraction of a token's experts the previous token also used on
// the same layer.
func (m *refModel) nextTokenReuse(trs []refTrace) float64 {
	var hit, total int
	for t := 1; t < len(trs); t++ {
		for l := range m.layers {
			for _, e := range trs[t].topk[l] {
				if slices.Contains(trs[t-1].topk[l], e) {
					hit++
				}
				total++
			}
		}
	}
	return float64(hit) / float64(total)
}

// adjacentCosine is the mean cosine between consecutive layers' router inputs.
func (m *refModel) adjacentCosine(trs []refTrace) float64 {
	var s float64
	n := 0
	for _, tr := range trs {
		for l := 0; l+1 < m.layers; l++ {
			a, b := tr.routerIn[l], tr.routerIn[l+1]
			var ab, aa, bb float64
			for i := range a {
				ab += float64(a[i] * b[i])
				aa += float64(a[i] * a[i])
				bb += float64(b[i] * b[i])
			}
			s += ab / (math.Sqrt(aa*bb) + 1e-30)
			n++
		}
	}
	return s / float64(n)
}
