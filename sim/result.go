package sim

import (
	"math"
	"slices"
)

// Result is the outcome of one run, simulated or measured live: the same
// struct either way, so reports can put prediction and measurement side by
// side field by field. docs/metrics.md gives each field's formula.
//
// All times are nanoseconds, sizes bytes. Decode metrics exclude prefill.
type Result struct {
	// Source says how the numbers were obtained: SourceSimulated (sim.Run)
	// or SourceMeasured (a live run of the real engine).
	Source string `json:"source"`
	// Unmeasured names the JSON fields a measured run could not measure (they
	// hold zero); empty for simulated runs, whose every field is computed. A
	// report joining prediction and measurement skips these fields.
	Unmeasured []string `json:"unmeasured,omitempty"`

	Policy string `json:"policy"`
	Model  string `json:"model"`
	Device string `json:"device"`
	Layout string `json:"layout"`

	CacheBytes        int64 `json:"cache_bytes"`
	DeviceBudgetBytes int64 `json:"device_budget_bytes"`

	Tokens int64 `json:"tokens"` // decode tokens emitted (accepted)
	Passes int64 `json:"passes"` // decode forward passes
	TimeNS int64 `json:"time_ns"`

	TokensPerSec      float64 `json:"tokens_per_sec"`
	AcceptedPerPass   float64 `json:"accepted_per_pass"`
	LatencyP50NS      int64   `json:"latency_p50_ns"`
	LatencyP90NS      int64   `json:"latency_p90_ns"`
	LatencyP99NS      int64   `json:"latency_p99_ns"`
	LatencyMaxNS      int64   `json:"latency_max_ns"`
	ComputeNS         int64   `json:"compute_ns"`           // compute thread busy with dense and expert work
	StallNS           int64   `json:"stall_ns"`             // compute thread idle or faulting, waiting for experts
	StallFlashNS      int64   `json:"stall_flash_ns"`       // of which waiting for reads to finish
	StallFaultCPUNS   int64   `json:"stall_fault_cpu_ns"`   // of which page-fault handling (gguf-mmap)
	LoadCPUNS         int64   `json:"load_cpu_ns"`          // compute thread loading experts (commit, copy, bookkeeping)
	DraftNS           int64   `json:"draft_ns,omitempty"`   // compute thread running the speculative drafter
	DemandQueueWaitNS int64   `json:"demand_queue_wait_ns"` // demand reads waiting for a lane (behind other reads)
	FlashBusyNS       int64   `json:"flash_busy_ns"`        // decode time with at least one transfer in progress

	FlashBytes         int64   `json:"flash_bytes"`
	FlashReads         int64   `json:"flash_reads"`
	FlashBytesPerToken float64 `json:"flash_bytes_per_token"`

	Uses         int64   `json:"uses"`          // expert uses: distinct (layer, expert) per pass
	Hits         int64   `json:"hits"`          // resident when the layer's top-k was known
	InflightHits int64   `json:"inflight_hits"` // loading (prefetched, not finished) at that moment
	Misses       int64   `json:"misses"`        // absent: demand-loaded
	HitRate      float64 `json:"hit_rate"`      // Hits / Uses

	PrefetchRequested   int64   `json:"prefetch_requested"`    // distinct keys a policy named, per pass and layer
	PrefetchCovered     int64   `json:"prefetch_covered"`      // uses whose key was named for that pass
	PrefetchRecall      float64 `json:"prefetch_recall"`       // covered / uses
	PrefetchPrecision   float64 `json:"prefetch_precision"`    // covered / requested
	PrefetchLoads       int64   `json:"prefetch_loads"`        // reads started by prefetch
	PrefetchUseful      int64   `json:"prefetch_useful"`       // prefetched loads used before eviction
	PrefetchBytes       int64   `json:"prefetch_bytes"`        // bytes read by prefetch
	WastedPrefetchBytes int64   `json:"wasted_prefetch_bytes"` // prefetched, evicted (or left at end) unused
	PeakResidentBytes   int64   `json:"peak_resident_bytes"`   // resident + loading, maximum over the run
	OverBudgetLoads     int64   `json:"over_budget_loads"`     // demand loads admitted beyond the cache (a batch needing more than fits)
	OverBudgetBytes     int64   `json:"over_budget_bytes"`     // the most held beyond the cache budget

	// ContextNS is compute-thread time on the KV cache, attention over the
	// context and recurrent state (part of ComputeNS; Config.ContextCost).
	ContextNS int64 `json:"context_ns,omitempty"`
	// AppFootprintBytes is what the app holds against the device's app limit
	// (only when the device states one): expert cache, resident weights, KV
	// cache, recurrent state (with ContextCost) and runtime.
	AppFootprintBytes int64 `json:"app_footprint_bytes,omitempty"`
	// PressureFaults, PressureFaultBytes and PressureNS are the memory-pressure
	// refaults of dropped weights in decode: faults, bytes read (part of
	// FlashBytes) and compute-thread time (part of StallNS).
	PressureFaults     int64 `json:"pressure_faults,omitempty"`
	PressureFaultBytes int64 `json:"pressure_fault_bytes,omitempty"`
	PressureNS         int64 `json:"pressure_ns,omitempty"`
	// RejectedDrafts counts drafts verified and rejected (speculative decoding
	// with the acceptance model); their experts were loaded as their own.
	RejectedDrafts int64 `json:"rejected_drafts,omitempty"`
	// The stock page-fault path and the GPU backend (docs/model.md); omitted when zero.
	NeighbourLoads int64 `json:"neighbour_loads,omitempty"` // gguf-mmap: experts made resident by another expert's read-around/read-ahead
	NeighbourBytes int64 `json:"neighbour_bytes,omitempty"` // their bytes
	GPUSyncNS      int64 `json:"gpu_sync_ns,omitempty"`     // backend gpu: host-device synchronisations (part of compute_ns)

	PrefillTokens int64 `json:"prefill_tokens"`
	PrefillNS     int64 `json:"prefill_ns"`

	Warnings []string `json:"warnings,omitempty"`

	// Series holds one sample per decode pass when Config.KeepSeries is set.
	Series []PassSample `json:"series,omitempty"`
}

// Sources of a Result.
const (
	SourceSimulated = "simulated"
	SourceMeasured  = "measured"
)

// PassSample is one decode pass: when it started, how long it took, how much
// of that the compute thread stalled, and how many tokens it emitted.
type PassSample struct {
	StartNS    int64 `json:"start_ns"`
	TimeNS     int64 `json:"time_ns"`
	StallNS    int64 `json:"stall_ns"`
	LoadCPUNS  int64 `json:"load_cpu_ns"`
	DraftNS    int64 `json:"draft_ns,omitempty"`
	FlashBytes int64 `json:"flash_bytes"`
	Accepted   int   `json:"accepted"`
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted
// values: the smallest value with at least p% of the values at or below it;
// 0 for no values. lessim's one percentile: the latency percentiles here,
// fit's residual percentiles and calibrate's medians and quartiles.
func Percentile[T int64 | float64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// finish derives the ratio fields from the counters.
// It sorts latencies in place.
// It marks r as simulated.
func (r *Result) finish(latencies []int64) {
	r.Source = SourceSimulated
	s := latencies
	slices.Sort(s)
	r.LatencyP50NS = Percentile(s, 50)
	r.LatencyP90NS = Percentile(s, 90)
	r.LatencyP99NS = Percentile(s, 99)
	if len(s) > 0 {
		r.LatencyMaxNS = s[len(s)-1]
	}
	if r.TimeNS > 0 {
		r.TokensPerSec = float64(r.Tokens) * 1e9 / float64(r.TimeNS)
	}
	r.AcceptedPerPass = ratio(r.Tokens, r.Passes)
	r.FlashBytesPerToken = ratio(r.FlashBytes, r.Tokens)
	r.HitRate = ratio(r.Hits, r.Uses)
	r.PrefetchRecall = ratio(r.PrefetchCovered, r.Uses)
	r.PrefetchPrecision = ratio(r.PrefetchCovered, r.PrefetchRequested)
}
