package calibrate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
)

// directAlign is the offset and size alignment of O_DIRECT reads: a page, which
// is a multiple of every common logical block size. NB: in this untagged file
// because Validate, which the pure-Go command line calls on every system,
// checks the read sizes against it.
const directAlign = 4096

// Options configures Run. Zero fields take the defaults of DefaultOptions.
// The measuring fields have JSON names: they are the calibrate options of
// lessim's live engine on an agent (`lessim calibrate --target` sends the
// measuring flags the user set); the others are the caller's own.
type Options struct {
	Model string `json:"-"` // the GGUF model: its file system is measured, and it is decoded
	Out   string `json:"-"` // the profile to write (YAML)

	Lanes   []int   `json:"lanes,omitempty"`       // reads in flight to measure, from 1, increasing (default 1, 2, 4)
	Sizes   []int64 `json:"sizes_bytes,omitempty"` // O_DIRECT read sizes, multiples of 4 KiB, increasing (default 128 KiB … 4 MiB)
	Samples int     `json:"samples,omitempty"`     // samples per measured value (default 5)
	Reads   int     `json:"reads,omitempty"`       // reads per lane per flash sample (default 16)
	Tokens  int     `json:"tokens,omitempty"`      // decoded tokens per model for the compute fit (default 16)

	MemBytes int64 `json:"mem_bytes,omitempty"` // buffer streamed for memory bandwidth (default 256 MiB)
	// DraftModel, when set, is a draft model (live --draft-model) whose
	// one-token decode is timed for compute.draft_token. A path: only an
	// engine in its caller's process takes it.
	DraftModel string `json:"draft_model,omitempty"`

	Host string    `json:"-"` // host name in sources (default os.Hostname)
	Now  time.Time `json:"-"` // time in sources (default now, UTC, to the second)
	Seed uint64    `json:"-"` // seed of the random read offsets
	Log  io.Writer `json:"-"` // sparse progress lines; nil for none
}

// DefaultOptions are the defaults for a thorough run of about a minute on a
// small model.
func DefaultOptions() Options {
	return Options{
		Lanes:   []int{1, 2, 4},
		Sizes:   []int64{128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20},
		Samples: 5, Reads: 16, Tokens: 16, MemBytes: 256 << 20, Seed: 1,
	}
}

// EnsureDefaults fills zero fields from DefaultOptions, the host name and the clock.
func (o *Options) EnsureDefaults() {
	d := DefaultOptions()
	if len(o.Lanes) == 0 {
		o.Lanes = d.Lanes
	}
	if len(o.Sizes) == 0 {
		o.Sizes = d.Sizes
	}
	if o.Samples == 0 {
		o.Samples = d.Samples
	}
	if o.Reads == 0 {
		o.Reads = d.Reads
	}
	if o.Tokens == 0 {
		o.Tokens = d.Tokens
	}
	if o.MemBytes == 0 {
		o.MemBytes = d.MemBytes
	}
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
		if o.Host == "" {
			o.Host = "this host"
		}
	}
	if o.Now.IsZero() {
		o.Now = time.Now().UTC().Truncate(time.Second)
	}
}

// MinTokens is the fewest decode tokens per model Run takes: the live
// engine's load cost is a line fitted through the tokens of its two runs
// (measureLiveLoad), which needs at least 3 of them, so 2 per run.
const MinTokens = 2

// CheckCounts refuses samples, reads or tokens (calibrate's --samples,
// --reads, --tokens) below their minimum: 1, 1 and MinTokens. It names each
// as its flag, with one message for a local run and one on an agent
// (calibrate --target checks the flags with it before sending them).
func CheckCounts(samples, reads, tokens int) error {
	var errs []error
	for _, c := range []struct {
		name   string
		v, min int
		why    string
	}{
		{"samples", samples, 1, "samples per measured value"},
		{"reads", reads, 1, "reads per lane per flash sample"},
		{"tokens", tokens, MinTokens, "decoded tokens per model: the live engine's load-cost fit needs at least 3 over its two runs"},
	} {
		if c.v < c.min {
			errs = append(errs, fmt.Errorf("--%s %d: want at least %d (%s)", c.name, c.v, c.min, c.why))
		}
	}
	return errors.Join(errs...)
}

// Validate reports every problem at once. It reads the model's GGUF header
// (record.CheckModel, as record, live and validate do): a missing file, one
// that is not a GGUF Mixture-of-Experts model llama.cpp can run, is refused
// here rather than after the flash has been measured on it (the live engine's
// load-cost runs need such a model).
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Model == "" {
		bad("--model is required")
	} else if mc, err := record.CheckModel(o.Model); err != nil {
		errs = append(errs, err)
	} else {
		mc.File.Close()
	}
	if o.DraftModel != "" {
		if _, _, err := record.DraftCost(o.DraftModel); err != nil {
			errs = append(errs, fmt.Errorf("--draft-model: %w", err))
		}
	}
	if o.Out == "" {
		bad("--out is required")
	} else if err := atomicfile.CheckDistinct(o.Out, o.Model); err != nil {
		bad("--out: %w", err) // NB: the profile would replace the model it measures
	} else if err := atomicfile.CheckTarget(o.Out); err != nil {
		bad("--out: %w", err) // a folder, or a folder that refuses files: refused before a minute of measuring
	}
	if len(o.Lanes) > 0 && o.Lanes[0] != 1 {
		bad("lanes must start at 1 (the single-lane curve), got %d", o.Lanes[0])
	}
	prev := 0
	for _, l := range o.Lanes {
		if l < 1 || l > live.MaxLanes {
			bad("lanes %d out of range 1..%d", l, live.MaxLanes)
		} else if l <= prev {
			bad("lanes must increase (%d after %d)", l, prev)
		}
		prev = l
	}
	var prevS int64
	for _, s := range o.Sizes {
		if s <= 0 || s%directAlign != 0 {
			bad("read size %d B is not a positive multiple of 4 KiB (O_DIRECT needs aligned reads)", s)
		} else if s <= prevS {
			bad("read sizes must increase (%s after %s)", size(s), size(prevS))
		}
		prevS = s
	}
	if err := CheckCounts(o.Samples, o.Reads, o.Tokens); err != nil {
		errs = append(errs, err)
	}
	if o.MemBytes < 1<<20 {
		bad("memory buffer %d B is below 1 MiB", o.MemBytes)
	}
	if strings.ContainsAny(o.Host, "\n\r") {
		bad("host name has a line break")
	}
	return errors.Join(errs...)
}
