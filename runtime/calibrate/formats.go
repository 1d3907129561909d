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

// measureFormats times base (a synthetic variant of the model's shape)
// with every matrix in each of calibrateFormats, in dir, and derives each
// format's byte rate from c's fit (FormatPoint).
func measureFormats(ctx context.Context, o *Options, c *Compute, base gguf.SynthOptions, dir string, logf func(string, ...any)) error {
	for _, q := range calibrateFormats {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, _ := devices.ParseQuantType(q)
		fp := FormatPoint{Type: t}
		v := base
		v.Quant, v.ExpertQuant, v.Quantize = q, "", llama.Quantize
		if err := v.Validate(); err != nil {
			fp.Why = fmt.Sprintf("the model's shape cannot be written in %s (%s)", t, strings.TrimPrefix(firstLine(err.Error()), "invalid synthetic model options: "))
			logf("compute: format %s: none: %s", t, fp.Why)
			c.Formats = append(c.Formats, fp)
			continue
		}
		path := filepath.Join(dir, "format-"+q+".gguf")
		if err := gguf.SynthMoE(path, v); err != nil {
			return fmt.Errorf("calibrate: synthetic %s variant: %w", t, err)
		}
		p, err := timeModel(path, fmt.Sprintf("variant %d layers × top-%d, %s", v.Layers, v.TopK, t), o.Tokens, o.Samples, false)
		os.Remove(path)
		if err != nil {
			return err
		}
		fp.Point = p
		own := p.TypeBytes[t]
		left := p.TokenNS.Median - float64(p.Layers)*c.LayerOverheadNS - (p.Bytes-own)/c.BytesPerSec*1e9
		if own <= 0 || left <= 0 {
			fp.Why = fmt.Sprintf("its %.2f ms/token left no time for its %.0f %s bytes once %d layers' overhead and its other bytes at the fit's rate were taken off", p.TokenNS.Median/1e6, own, t, p.Layers)
			logf("compute: format %s: none: %s", t, fp.Why)
		} else {
			fp.BytesPerSec = own / (left / 1e9)
			logf("compute: format %s: %.2f ms/token, %s of %s weights", t, p.TokenNS.Median/1e6, gbps(fp.BytesPerSec), t)
		}
		c.Formats = append(c.Formats, fp)
	}
	return nil
}
