//go:build llamacpp && linux

package calibrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/llama"
)

// calibrateFormats are the weight formats calibrate times (memory.format_efficiency):
// the ones lessim's synthetic models can be written in besides f16, each
// with ggml's own quantizer.
var calibrateFormats = []string{"q8_0", "q4_k", "q3_k", "mxfp4"}

// formatRounds is how many rounds measureFormats goes round the formats:
// a slow phase of a shared machine spreads over all of them instead of
// landing on one.
const formatRounds = 4

// measureFormats times base (a synthetic variant of the model's shape)
// with every matrix in each of calibrateFormats, in dir, and derives each
// format's byte rate from c's fit (FormatPoint). The variants are decoded
// in formatRounds rounds, each decoding o.Tokens tokens of every format
// in turn (after two warm-up tokens each).
func measureFormats(ctx context.Context, o *Options, c *Compute, base gguf.SynthOptions, dir string, logf func(string, ...any)) error {
	type timed struct {
		fp  FormatPoint
		dec *decoder
		ns  []float64
	}
	var ts []*timed
	defer func() {
		for _, t := range ts {
			if t.dec != nil {
				t.dec.close()
			}
		}
	}()
	for _, q := range calibrateFormats {
		t, _ := devices.ParseQuantType(q)
		tm := &timed{fp: FormatPoint{Type: t}}
		ts = append(ts, tm)
		v := base
		v.Quant, v.ExpertQuant, v.Quantize = q, "", llama.Quantize
		if err := v.Validate(); err != nil {
			tm.fp.Why = fmt.Sprintf("the model's shape cannot be written in %s (%s)", t, strings.TrimPrefix(firstLine(err.Error()), "invalid synthetic model options: "))
			logf("compute: format %s: none: %s", t, tm.fp.Why)
			continue
		}
		path := filepath.Join(dir, "format-"+q+".gguf")
		if err := gguf.SynthMoE(path, v); err != nil {
			return fmt.Errorf("calibrate: synthetic %s variant: %w", t, err)
		}
		p, err := shapeOf(path, fmt.Sprintf("variant %d layers × top-%d, %s", v.Layers, v.TopK, t))
		if err == nil {
			tm.fp.Point = p
			tm.dec, err = openDecoder(path)
		}
		os.Remove(path) // NB: the mapping keeps the data until the model is closed
		if err != nil {
			return err
		}
		for range 2 { // warm-up
			if _, err := tm.dec.next(); err != nil {
				return err
			}
		}
	}
	for range formatRounds {
		for _, tm := range ts {
			if err := ctx.Err(); err != nil {
				return err
			}
			for i := 0; tm.dec != nil && i < o.Tokens; i++ {
				ns, err := tm.dec.next()
				if err != nil {
					return err
				}
				tm.ns = append(tm.ns, ns)
			}
		}
	}
	for _, tm := range ts {
		if tm.dec != nil {
			tm.fp.Point.TokenNS = Summarize(tm.ns)
			tm.fp.rate(c)
			if tm.fp.Why != "" {
				logf("compute: format %s: none: %s", tm.fp.Type, tm.fp.Why)
			} else {
				logf("compute: format %s: %.2f ms/token, %s of %s weights", tm.fp.Type, tm.fp.Point.TokenNS.Median/1e6, gbps(tm.fp.BytesPerSec), tm.fp.Type)
			}
		}
		c.Formats = append(c.Formats, tm.fp)
	}
	return nil
}

// rate sets the format's byte rate from its timed point and c's fit, or
// Why when no time is left for its bytes.
func (f *FormatPoint) rate(c *Compute) {
	p := f.Point
	own := p.TypeBytes[f.Type]
	left := p.TokenNS.Median - float64(p.Layers)*c.LayerOverheadNS - (p.Bytes-own)/c.BytesPerSec*1e9
	if own <= 0 || left <= 0 {
		f.Why = fmt.Sprintf("its %.2f ms/token left no time for its %.0f %s bytes once %d layers' overhead and its other bytes at the fit's rate were taken off", p.TokenNS.Median/1e6, own, f.Type, p.Layers)
		return
	}
	f.BytesPerSec = own / (left / 1e9)
}
