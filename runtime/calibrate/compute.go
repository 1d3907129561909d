//go:build llamacpp && linux

package calibrate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/llama"
	"github.com/lessim/lessim/runtime/record"
)

// measureCompute times decode on the model and on synthetic variants of its
// shape (written to a temporary folder, removed after), with every weight read
// into RAM first.
func measureCompute(ctx context.Context, o *Options, logf func(string, ...any)) (*Compute, error) {
	c := &Compute{Threads: 1}
	user, err := timeModel(o.Model, filepath.Base(o.Model), o.Tokens, o.Samples, true, 1)
	if err != nil {
		return nil, err
	}
	logf("compute: %s: %.2f ms/token (%d tokens)", filepath.Base(o.Model), user.TokenNS.Median/1e6, user.TokenNS.N)
	c.Points = append(c.Points, user)
	variants, fmtBase, why := variantOptions(o.Model)
	dir, err := os.MkdirTemp("", "lessim-calibrate-")
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer os.RemoveAll(dir)
	if len(variants) > 0 {
		for i, v := range variants {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			path := filepath.Join(dir, fmt.Sprintf("variant-%d.gguf", i))
			if err := gguf.SynthMoE(path, v); err != nil {
				return nil, fmt.Errorf("calibrate: synthetic variant: %w", err)
			}
			p, err := timeModel(path, fmt.Sprintf("variant %d layers × top-%d", v.Layers, v.TopK), o.Tokens, o.Samples, false, 1)
			os.Remove(path)
			if err != nil {
				return nil, err
			}
			logf("compute: %s: %.2f ms/token", p.Name, p.TokenNS.Median/1e6)
			c.Points = append(c.Points, p)
		}
	}
	if err := c.fit(why); err != nil {
		return nil, err
	}
	if fmtBase != nil {
		if err := measureFormats(ctx, o, c, *fmtBase, dir, logf); err != nil {
			return nil, err
		}
	}
	if o.DraftModel != "" {
		if c.Draft, err = timeDraft(o.DraftModel, o.Tokens); err != nil {
			return nil, err
		}
		logf("compute: draft model %s: %.2f ms/token", c.Draft.Name, c.Draft.TokenNS.Median/1e6)
	}
	return c, nil
}

// timeDraft times a draft model's one-token greedy decode as the model
// drafter runs it (1 thread, everything in RAM): tokens passes after two
// warm-up passes. The model may be dense: only its weight bytes per token
// (as live states them, record.DraftCost) are read from its file.
func timeDraft(path string, tokens int) (*DraftPoint, error) {
	b, _, err := record.DraftCost(path)
	if err != nil {
		return nil, err
	}
	d, err := openDecoder(path, 1)
	if err != nil {
		return nil, fmt.Errorf("draft model: %w", err)
	}
	defer d.close()
	s, err := d.time(tokens)
	return &DraftPoint{Name: filepath.Base(path), Bytes: b, TokenNS: s}, err
}

// measureThreads times decode of the model at 2 threads (everything in
// RAM, as timeModel) against c's 1-thread time, for compute.parallel.
func measureThreads(o *Options, c *Compute, logf func(string, ...any)) (Summary, error) {
	p, err := timeModel(o.Model, filepath.Base(o.Model), o.Tokens, o.Samples, false, 2)
	if err != nil {
		return Summary{}, err
	}
	logf("compute: %s at 2 threads: %.2f ms/token (1 thread %.2f)", p.Name, p.TokenNS.Median/1e6, c.Points[0].TokenNS.Median/1e6)
	return p.TokenNS, nil
}

// warmFile reads the whole file once so its pages are in the page cache.
func warmFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, make([]byte, 8<<20))
	return err
}

// timeModel decodes tokens single-token passes (after two warm-up passes) on the
// model at path with 1 thread and everything in RAM; with batches it also times
// passes of batchSizes tokens (every row an output: a verify pass), samples each.
func timeModel(path, name string, tokens, samples int, batches bool, threads int) (ShapePoint, error) {
	p, err := shapeOf(path, name)
	if err != nil {
		return p, err
	}
	d, err := openDecoder(path, threads)
	if err != nil {
		return p, err
	}
	defer d.close()
	if p.TokenNS, err = d.time(tokens); err != nil {
		return p, err
	}
	ctx, toks := d.ctx, d.toks
	if batches {
		p.BatchNS = map[int]Summary{1: p.TokenNS}
		for _, n := range batchSizes[1:] {
			var ts []float64
			for range samples {
				ctx.Reset()
				// NB: every row an output, as a speculative verify pass
				// (and a recorded prefill) runs: every row reaches every
				// layer and the output head, as the simulator charges a pass.
				if err := ctx.DecodeAll(toks[:n]); err != nil {
					return p, fmt.Errorf("calibrate: decode %d tokens: %w", n, err)
				}
				ts = append(ts, float64(ctx.PassNS()))
			}
			p.BatchNS[n] = Summarize(ts)
		}
	}
	return p, nil
}

// shapeOf is the work per token of the model at path, as sim charges it.
func shapeOf(path, name string) (ShapePoint, error) {
	p := ShapePoint{Name: name}
	f, err := gguf.Open(path)
	if err != nil {
		return p, err
	}
	spec, err := f.ModelSpec()
	f.Close()
	if err != nil {
		return p, err
	}
	p.Layers, p.TopK = len(spec.Layers), spec.TopK
	for _, l := range spec.Layers {
		p.Bytes += float64(l.DenseBytes + int64(spec.TopK)*l.ExpertBytes)
		p.FLOPs += float64(l.DenseFLOPsPerToken + int64(spec.TopK)*l.ExpertFLOPsPerToken)
		p.DenseBytes += float64(l.DenseBytes) / float64(len(spec.Layers))
		p.ExpertBytes += float64(l.ExpertBytes) / float64(len(spec.Layers))
		p.ExpertFLOPs += float64(l.ExpertFLOPsPerToken) / float64(len(spec.Layers))
	}
	p.Bytes += float64(spec.HeadBytes)
	p.FLOPs += float64(spec.HeadFLOPsPerToken)
	p.TypeBytes = map[devices.QuantType]float64{}
	for _, l := range spec.Layers {
		for _, d := range l.DenseTypes {
			p.TypeBytes[d.Type] += float64(d.Bytes)
		}
		for _, t := range l.Tensors {
			p.TypeBytes[t.Type] += float64(int64(spec.TopK) * t.Bytes)
		}
	}
	if spec.HeadType != "" {
		p.TypeBytes[spec.HeadType] += float64(spec.HeadBytes)
	}
	p.ModelFLOPsTok = p.FLOPs
	return p, nil
}

// decoder decodes the calibration text one token at a time, with 1 thread
// and every weight in RAM (the file read once first).
type decoder struct {
	m    *llama.Model
	ctx  *llama.Context
	toks []int32
	i    int
}

func openDecoder(path string, threads int) (*decoder, error) {
	if err := warmFile(path); err != nil {
		return nil, err
	}
	m, err := llama.Load(path, llama.ModelOptions{})
	if err != nil {
		return nil, err
	}
	d := &decoder{m: m}
	if d.ctx, err = m.NewContext(llama.ContextOptions{Threads: threads, Ctx: 1024, Batch: 16}); err != nil {
		m.Close()
		return nil, err
	}
	if d.toks, err = m.Tokenize("Calibration text: the quick brown fox jumps over the lazy dog, 0123456789.", true); err == nil && len(d.toks) < 8 {
		err = fmt.Errorf("calibrate: the model's tokenizer gave only %d tokens for the calibration text", len(d.toks))
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// next decodes the next token and returns the pass's time in ns.
func (d *decoder) next() (float64, error) {
	if d.ctx.Pos() >= 1000 {
		d.ctx.Reset()
	}
	j := d.i % len(d.toks)
	d.i++
	if err := d.ctx.Decode(d.toks[j : j+1]); err != nil {
		return 0, fmt.Errorf("calibrate: decode: %w", err)
	}
	return float64(d.ctx.PassNS()), nil
}

// time decodes tokens one-token passes after two warm-up passes and
// summarizes their times.
func (d *decoder) time(tokens int) (Summary, error) {
	var per []float64
	for i := range tokens + 2 {
		ns, err := d.next()
		if err != nil {
			return Summary{}, err
		}
		if i >= 2 {
			per = append(per, ns)
		}
	}
	return Summarize(per), nil
}

func (d *decoder) close() {
	d.ctx.Close()
	d.m.Close()
}

// variantOptions are synthetic models of the user's model's shape with fewer
// layers and experts (2 and 4 layers; top-1 and the model's top-k, all experts
// used), or none and why when the model cannot be synthesized; and the
// 4-layer, top-k one whatever the model's size (nil when the shape cannot be
// synthesized), which measureFormats writes in each format.
func variantOptions(path string) ([]gguf.SynthOptions, *gguf.SynthOptions, string) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err.Error()
	}
	defer f.Close()
	m, err := f.MoE()
	if err != nil {
		return nil, nil, err.Error()
	}
	arch := m.Arch
	quant := ""
	if len(m.Layers) > 0 && len(m.Layers[0].Tensors) > 0 {
		if t := m.Layers[0].Tensors[0].Type; slices.Contains(append(calibrateFormats, "f16"), strings.ToLower(string(t.Name()))) {
			quant = strings.ToLower(string(t.Name()))
		}
	}
	get := func(key string) int {
		u, _ := f.Uint(arch + "." + key)
		return int(min(u, 1<<20))
	}
	o := gguf.SynthOptions{Arch: arch, Hidden: m.Hidden, ExpertFFN: m.ExpertFFN, Heads: get("attention.head_count"),
		HeadsKV: get("attention.head_count_kv"), HeadDim: get("attention.key_length"), Context: get("context_length"),
		Quant: quant, Quantize: llama.Quantize, RouterCorrelation: 0.7, AttentionScale: 1, Seed: 1}
	if toks, ok := f.Strings("tokenizer.ggml.tokens"); ok {
		o.Vocab = len(toks)
	}
	if o.HeadDim == 0 && o.Heads > 0 {
		o.HeadDim = o.Hidden / o.Heads
	}
	if o.HeadsKV == 0 {
		o.HeadsKV = o.Heads
	}
	var out []gguf.SynthOptions
	k := max(m.TopK, 1)
	for _, lk := range [][2]int{{2, 1}, {2, k}, {4, k}} {
		v := o
		v.Layers, v.TopK, v.Experts = lk[0], lk[1], max(k, 2)
		if err := v.Validate(); err != nil {
			return nil, nil, fmt.Sprintf("its shape cannot be synthesized (%v)", firstLine(err.Error()))
		}
		out = append(out, v)
	}
	base := out[len(out)-1]
	// Keep only shapes smaller than the model: the model itself is a point already.
	out = slices.DeleteFunc(out, func(v gguf.SynthOptions) bool { return v.Layers >= len(m.Layers) && v.TopK >= m.TopK })
	if len(out) == 0 {
		return nil, &base, "the model is already as small as the variants (2 layers, top-1)"
	}
	return out, &base, ""
}

func firstLine(s string) string {
	if i := slices.Index([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
