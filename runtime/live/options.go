package live

import (
	"errors"
	"fmt"

	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/runtime/record"
)

// Options configures Run.
type Options struct {
	Model  string // GGUF file (a MoE model llama.cpp supports)
	Policy string // registry name (policies.Names)
	// Cache is the expert cache budget in bytes.
	Cache int64
	// Tokens is the number of decode tokens to generate and measure.
	Tokens int
	// Prompt is the text prefilled before decoding; "" uses DefaultPrompt.
	Prompt string
	// Lanes is the number of I/O lanes issuing preads (default 2).
	Lanes int
	// Threads is llama.cpp's compute threads (default 1).
	Threads int
	// Depth and Prefetch override the policy's lookahead depth and prefetch
	// switch when Depth >= 0 (les); -1 keeps the policy's defaults.
	Depth    int
	Prefetch bool
	// Stock runs the stock baseline: page faults, no pread, no prefetch (the
	// policy must not prefetch: ondemand or lru).
	Stock bool
	// Spec, when set, decodes speculatively (record.Speculative): greedy
	// verify passes of Spec.Block tokens through the same books; each
	// TokenSample is then one pass.
	Spec *record.Speculative
	// KeepSeries records one TokenSample per decode token.
	KeepSeries bool
	// OnToken, when set, is called with each decode token's sample as soon
	// as it is measured (outside the token's timing); an error from it ends
	// the run with that error.
	OnToken func(TokenSample) error
}

// DefaultPrompt is the text prefilled when Options.Prompt is empty.
const DefaultPrompt = "The history of the printing press begins"

// DefaultOptions are the options lessim live starts from.
func DefaultOptions() Options {
	return Options{Policy: "les", Tokens: 64, Lanes: 2, Threads: 1, Depth: -1, Prefetch: true}
}

// EnsureDefaults fills zero Lanes, Threads and Prompt with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Lanes == 0 {
		o.Lanes = 2
	}
	if o.Threads == 0 {
		o.Threads = 1
	}
	if o.Prompt == "" {
		o.Prompt = DefaultPrompt
	}
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Model == "" {
		errs = append(errs, errors.New("model: missing (a GGUF file)"))
	}
	known := false
	if o.Policy == "" {
		errs = append(errs, errors.New("policy: missing"))
	} else if err := policies.CheckName(o.Policy); err != nil {
		errs = append(errs, err)
	} else if err := policies.CheckLive(o.Policy); err != nil {
		errs = append(errs, err)
	} else {
		known = true
	}
	if o.Cache <= 0 {
		errs = append(errs, fmt.Errorf("cache %d bytes: must be positive", o.Cache))
	}
	for _, err := range []error{record.CheckDecodeTokens(o.Tokens), CheckLanes(o.Lanes), record.CheckThreads(o.Threads), o.checkDepth()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if o.Spec != nil {
		if err := o.Spec.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Stock && known && o.Policy != "ondemand" && o.Policy != "lru" {
		errs = append(errs, fmt.Errorf("stock mode has no prefetch and evicts LRU: policy %q does not fit (use ondemand)", o.Policy))
	}
	return errors.Join(errs...)
}

// MaxLanes bounds the I/O lanes: each is a goroutine with its own read
// buffer of the largest expert region, and flash queues saturate long
// before 256 reads in flight (calibrate measures up to the same bound).
const MaxLanes = 256

// CheckLanes refuses an I/O lane count outside 1..MaxLanes (live's --lanes,
// validate's --lanes).
func CheckLanes(n int) error {
	if n < 1 || n > MaxLanes {
		return fmt.Errorf("lanes %d: want 1..%d", n, MaxLanes)
	}
	return nil
}

// checkDepth refuses a stated lookahead depth les cannot take (Depth -1
// keeps the policy's default; with Prefetch off the depth is unused).
func (o *Options) checkDepth() error {
	if o.Depth == -1 || !o.Prefetch {
		return nil
	}
	if err := policies.CheckDepth(o.Depth); err != nil {
		return fmt.Errorf("depth %d: %w", o.Depth, err)
	}
	return nil
}

// TokenSample is one decode pass as measured: one token, or with
// speculative decoding the Tokens its verify pass emitted.
type TokenSample struct {
	Token         int   `json:"token"`          // index of the pass's first decode token, from 0
	Tokens        int   `json:"-"`              // tokens the pass emitted (1 without speculative decoding)
	Drafts        int   `json:"-"`              // drafts the pass verified and rejected
	DraftNS       int64 `json:"-"`              // the drafter's time before the pass (part of WallNS)
	WallNS        int64 `json:"wall_ns"`        // the Decode call (and the drafting before it)
	StallNS       int64 `json:"stall_ns"`       // waiting for loads in the hooks (0 in stock mode: not measured)
	ComputeNS     int64 `json:"compute_ns"`     // wall − stall
	BytesRead     int64 `json:"bytes_read"`     // completed pread loads during the token
	Reads         int64 `json:"reads"`          // pread loads (one per expert) completed during the token
	Hits          int64 `json:"hits"`           // the Books' counts for the token
	InflightHits  int64 `json:"inflight_hits"`  //
	Misses        int64 `json:"misses"`         //
	PrefetchLoads int64 `json:"prefetch_loads"` //
	MajorFaults   int64 `json:"major_faults"`   // getrusage delta over the Decode call
	ResidentBytes int64 `json:"resident_bytes"` // expert bytes in the page cache at the token's end (mincore)
	StrayBytes    int64 `json:"stray_bytes"`    // stock mode: resident pages of experts the books hold absent, evicted after the token
}

// Unmeasured lists the Result fields (JSON names) a live run does not
// measure: they stay zero. With sim.Result's Source/Unmeasured fields (the
// experiment spec's), a live result is Source "measured" with this list.
func Unmeasured(stock bool) []string {
	u := []string{"device_budget_bytes", "flash_busy_ns", "stall_fault_cpu_ns", "load_cpu_ns",
		// The simulator's models of effects the live engine pays but does not
		// separate out: drafting, context, memory pressure, the stock path's
		// neighbours, a GPU's syncs.
		"draft_ns", "rejected_drafts", "context_ns", "app_footprint_bytes", "pressure_faults", "pressure_fault_bytes", "pressure_ns",
		"neighbour_loads", "neighbour_bytes", "gpu_sync_ns"}
	if stock {
		// Page faults happen inside the expert matmuls: their wait cannot be
		// told apart from compute, and no read is issued by lessim.
		u = append(u, "demand_queue_wait_ns", "flash_bytes", "flash_bytes_per_token", "flash_reads", "stall_flash_ns", "stall_ns")
	}
	return u
}
