//go:build llamacpp && linux

package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lessim/lessim/runtime/calibrate"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
)

var _ Recorder = (*LiveEngine)(nil)

// Bounds of LiveCalibrateOptions: a client may not make the agent measure
// for hours or allocate more than a few hundred MiB.
const (
	maxCalSamples  = 50
	maxCalReads    = 256
	maxCalTokens   = 512
	maxCalEntries  = 16
	maxCalMemBytes = 1 << 30
)

// calibrateOptions decodes and bounds raw (nil or {} for the defaults).
func (e *LiveEngine) calibrateOptions(raw json.RawMessage) (calibrate.Options, error) {
	var c LiveCalibrateOptions
	if len(raw) > 0 {
		if err := decodeStrict(raw, &c); err != nil {
			return calibrate.Options{}, err
		}
	}
	if !e.Local && (c.Samples < 0 || c.Samples > maxCalSamples || c.Reads < 0 || c.Reads > maxCalReads || c.Tokens < 0 || c.Tokens > maxCalTokens ||
		len(c.Lanes) > maxCalEntries || len(c.SizesBytes) > maxCalEntries || c.MemBytes < 0 || c.MemBytes > maxCalMemBytes) {
		return calibrate.Options{}, fmt.Errorf("options out of range: samples 0..%d, reads 0..%d, tokens 0..%d, at most %d lanes and sizes, mem_bytes 0..%d",
			maxCalSamples, maxCalReads, maxCalTokens, maxCalEntries, maxCalMemBytes)
	}
	for _, s := range c.SizesBytes {
		if s > 64<<20 && !e.Local {
			return calibrate.Options{}, fmt.Errorf("read size %d bytes: at most 64 MiB", s)
		}
	}
	o := calibrate.DefaultOptions()
	o.Model = e.path
	if c.Samples > 0 {
		o.Samples = c.Samples
	}
	if c.Reads > 0 {
		o.Reads = c.Reads
	}
	if c.Tokens > 0 {
		o.Tokens = c.Tokens
	}
	if len(c.Lanes) > 0 {
		o.Lanes = c.Lanes
	}
	if len(c.SizesBytes) > 0 {
		o.Sizes = c.SizesBytes
	}
	if c.MemBytes > 0 {
		o.MemBytes = c.MemBytes
	}
	return o, nil
}

// Calibrate measures this machine with runtime/calibrate on the engine's
// model (as `lessim calibrate --model FILE` does) and returns the profile.
// The profile is written into a temporary folder that is removed before
// returning, whatever happens; calibrate removes its own probes and
// synthetic variants, and stops between measurements when ctx ends.
func (e *LiveEngine) Calibrate(ctx context.Context, options json.RawMessage) ([]byte, error) {
	dir, err := os.MkdirTemp("", "lessim-agent-calibrate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	o, err := e.calibrateOptions(options)
	if err == nil {
		o.Out, o.Log = filepath.Join(dir, "profile.yaml"), e.Log
		err = o.Validate()
	}
	if err != nil && !e.Local {
		err = fmt.Errorf("%w: calibrate options: %v", ErrInvalidSpec, err)
	}
	if err != nil {
		return nil, err
	}
	r, err := calibrate.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	if e.Calibrated != nil {
		e.Calibrated(r)
	}
	return r.YAML, nil
}

// Record records the routing of tokens greedy decode tokens after the
// prompt the engine's runs use (Prompt, or live.DefaultPrompt), on the
// engine's threads, with lookahead depth 1 and no logits, and returns the trace file's bytes. The file is
// written into a temporary folder that is removed before returning.
func (e *LiveEngine) Record(ctx context.Context, tokens int) ([]byte, error) {
	if tokens < 1 || tokens > MaxLiveTokens {
		return nil, fmt.Errorf("%w: tokens %d: want 1..%d", ErrInvalidSpec, tokens, MaxLiveTokens)
	}
	dir, err := os.MkdirTemp("", "lessim-agent-record-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ro := record.DefaultOptions()
	ro.ModelPath, ro.Prompts, ro.PromptSet = e.path, []string{cmp.Or(e.Prompt, live.DefaultPrompt)}, "agent"
	if e.Local {
		ro.PromptSet = "validate"
	}
	ro.Tokens, ro.Temperature, ro.Threads, ro.Logits = tokens, 0, max(e.Threads, 1), false
	ro.Out = filepath.Join(dir, "trace.parquet")
	if _, err := record.Record(ctx, ro); err != nil {
		return nil, err
	}
	return os.ReadFile(ro.Out)
}
