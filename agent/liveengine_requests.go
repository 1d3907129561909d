//go:build llamacpp && linux

package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/lessim/lessim/runtime/calibrate"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
)

var _ Recorder = (*LiveEngine)(nil)

// Bounds of an agent's calibrate options: a client may not make the agent
// measure for hours or allocate more than a few hundred MiB.
const (
	maxCalSamples  = 50
	maxCalReads    = 256
	maxCalTokens   = 512
	maxCalEntries  = 16
	maxCalMemBytes = 1 << 30
	maxCalReadSize = 64 << 20
)

// calibrateOptions decodes raw, calibrate.Options' measuring fields as JSON
// (nil or {} for the defaults), and bounds them on an agent.
func (e *LiveEngine) calibrateOptions(raw json.RawMessage) (calibrate.Options, error) {
	var o calibrate.Options
	if len(raw) > 0 {
		if err := decodeStrict(raw, &o); err != nil {
			return o, err
		}
	}
	if !e.Local && (o.Samples < 0 || o.Samples > maxCalSamples || o.Reads < 0 || o.Reads > maxCalReads || o.Tokens < 0 || o.Tokens > maxCalTokens ||
		len(o.Lanes) > maxCalEntries || len(o.Sizes) > maxCalEntries || o.MemBytes < 0 || o.MemBytes > maxCalMemBytes ||
		len(o.Sizes) > 0 && slices.Max(o.Sizes) > maxCalReadSize) {
		return o, fmt.Errorf("options out of range: samples 0..%d, reads 0..%d, tokens 0..%d, at most %d lanes and sizes, read sizes up to %d bytes, mem_bytes 0..%d",
			maxCalSamples, maxCalReads, maxCalTokens, maxCalEntries, maxCalReadSize, maxCalMemBytes)
	}
	if !e.Local && o.DraftModel != "" {
		return o, errors.New("draft_model: an agent opens no path a client sends")
	}
	o.Model = e.path
	o.EnsureDefaults()
	return o, nil
}

// Calibrate measures this machine on the engine's model as lessim
// calibrate --model does, in a temporary folder removed before returning.
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
// runs' prompt, without logits, in a temporary folder removed before
// returning, and returns the trace file's bytes.
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
