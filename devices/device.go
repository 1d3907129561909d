package devices

// Device is a resolved device profile: plain numbers in SI base units that the
// simulator consumes. It is produced from a Profile (YAML with sources) by
// Profile.Device; Assumed names every field whose source says "assumed:".
//
// Units: bytes, bytes per second, nanoseconds, FLOP/s.
type Device struct {
	Name string `json:"name"`

	RAMBytes     int64 `json:"ram_bytes"`     // physical RAM
	ReserveBytes int64 `json:"reserve_bytes"` // OS, other apps and the runtime: not available to the model

	// AppLimitBytes is the memory the OS lets the app keep resident (iOS's
	// jetsam limit, raised by the increased-memory-limit entitlement),
	// distinct from RAM. Beyond it the OS drops the app's clean mapped
	// weights and they come back through page faults (sim: memory pressure).
	// Zero means not stated: no pressure model.
	AppLimitBytes int64 `json:"app_limit_bytes,omitempty"`
	// RuntimeBytes is the app's own memory besides weights, expert cache, KV
	// cache and recurrent state (runtime, compute buffers), counted against
	// AppLimitBytes. Zero when not stated.
	RuntimeBytes int64 `json:"runtime_bytes,omitempty"`
	// GrowthBytes is what the footprint grows by per token processed
	// besides the KV cache. Stated (with AppLimitBytes), the memory-pressure
	// model counts the footprint pass by pass: the KV cache up to the pass's
	// position plus GrowthBytes per token so far, so the refaults grow over
	// the run. Zero means not stated: one footprint for the whole run.
	GrowthBytes int64 `json:"growth_bytes,omitempty"`

	MemBandwidth  float64 `json:"mem_bandwidth"`  // peak DRAM bandwidth, bytes/s
	MemEfficiency float64 `json:"mem_efficiency"` // fraction of peak reached by decode matmuls (0,1]
	// FormatEfficiency is MemEfficiency by the ggml type of the weights
	// read, for the types the profile states (see Efficiency); nil when
	// it states none.
	FormatEfficiency map[QuantType]float64 `json:"format_efficiency,omitempty"`
	ComputeFLOPS     float64               `json:"compute_flops"` // sustained matmul throughput, FLOP/s
	// PassScaleByTokens is the per-token FLOP cost of an n-token pass
	// relative to one token's, by n (see PassScale); nil when not stated.
	PassScaleByTokens map[int]float64 `json:"pass_scale,omitempty"`
	LayerOverhead     int64           `json:"layer_overhead_ns"`

	// LoadFixedNS and LoadRate are what loading one expert costs the compute
	// thread besides the flash read (allocating and committing memory,
	// copying or repacking, cache bookkeeping): LoadFixedNS per load plus its
	// bytes at LoadRate bytes/s. Zero means free (the profile does not state it).
	LoadFixedNS int64   `json:"load_fixed_ns,omitempty"`
	LoadRate    float64 `json:"load_rate,omitempty"`

	// ComputeThreads is how many compute threads split each matmul's rows
	// (llama.cpp's --threads). It matters only for gguf-mmap, where every
	// thread faults its own rows of a missing expert in at once. Zero means
	// one (the profile does not state it).
	ComputeThreads int `json:"compute_threads,omitempty"`

	// Backend is the processor that decodes: "" (the CPU) or BackendGPU.
	// With the GPU every layer pays GPUSyncNS on the host to read the layer's
	// top-k back, and a lookahead router (les) one more.
	Backend   string `json:"backend,omitempty"`
	GPUSyncNS int64  `json:"gpu_sync_ns,omitempty"`

	// Cores is how many cores the compute threads and the I/O lanes share.
	// Stated, runnable threads beyond it share the cores equally: compute
	// stretches while lanes copy, and lanes slow while compute runs (sim:
	// cores.go). Zero means not stated: no contention.
	Cores int `json:"cores,omitempty"`
	// Background is the mean number of runnable threads of other work
	// sharing the Cores (other apps, a shared machine's other processes).
	// Zero means none (or not stated).
	Background float64 `json:"background,omitempty"`
	// Parallel is the share of compute that splits over the compute
	// threads (Amdahl): stated, the compute numbers are one thread's and T
	// threads take (1 − Parallel) + Parallel/T of that time. Zero means not
	// stated: the compute numbers are those of ComputeThreads.
	Parallel float64 `json:"parallel,omitempty"`
	// PredictNS is the compute thread's time per layer and token of a
	// lookahead router on the CPU backend (the next layer's router matmul).
	// Zero means free (not stated).
	PredictNS int64 `json:"predict_ns,omitempty"`
	// ThreadOverheadNS is what each compute thread beyond the first adds
	// to every layer of a token (LayerOverhead + (Threads − 1) ×
	// ThreadOverheadNS per layer); zero when not stated.
	ThreadOverheadNS int64 `json:"thread_overhead_ns,omitempty"`
	// DraftTokenNS is a draft model's measured time per draft token and
	// DraftBytes the weight bytes that model reads per token (calibrate
	// --draft-model); zero when not stated. A model drafter reading
	// DraftBytes is charged DraftTokenNS per draft token.
	DraftTokenNS int64 `json:"draft_token_ns,omitempty"`
	DraftBytes   int64 `json:"draft_bytes,omitempty"`

	Flash Flash `json:"flash"`

	// Assumed lists the dotted names of fields whose values are assumptions, not
	// measurements or specifications; the simulator copies them into Result warnings.
	Assumed []string `json:"assumed,omitempty"`

	// Warnings lists what the profile's validation accepted but found
	// suspicious, each as "field.path: reason" (e.g. a flash curve whose
	// throughput falls as reads grow); results should show them.
	Warnings []string `json:"warnings,omitempty"`
}

// Flash describes the storage the experts stream from.
//
// Model: at most Lanes reads are in flight at once (the queue depth the engine
// uses); each read first spends LatencyNS holding its lane, then transfers. The
// transfers in flight share bandwidth: each gets min(SingleLane(size),
// Aggregate(size)/k) for k concurrent transfers, so lanes beyond the knee add
// queueing latency, not bandwidth.
type Flash struct {
	Lanes     int   `json:"lanes"`
	LatencyNS int64 `json:"latency_ns"`
	// SingleLane is one read's transfer rate by read size (bytes/s), after
	// its LatencyNS has passed (Profile.Device removes the latency from the
	// measured throughput).
	SingleLane []CurvePoint `json:"single_lane"`
	// Aggregate is the device's saturated transfer rate by read size
	// (bytes/s), shared by all transfers in progress.
	Aggregate []CurvePoint `json:"aggregate"`

	PageBytes      int64 `json:"page_bytes"`       // OS page size (iOS 16 KiB)
	ReadAheadBytes int64 `json:"read_ahead_bytes"` // mmap fault read-ahead window
	FaultNS        int64 `json:"fault_ns"`         // CPU cost of one page fault, on the compute thread
	// ReadAheadAsyncBytes is the kernel's asynchronous read-ahead on
	// sequential mmap faults: after a fault's read-around window, the next
	// ReadAheadAsyncBytes are read without the faulting thread waiting
	// (Linux: ra_pages, 128 KiB by default). Zero means none (not stated).
	ReadAheadAsyncBytes int64 `json:"read_ahead_async_bytes,omitempty"`

	// ThermalFloor and ThermalBytes derate bandwidth as the flash heats
	// under sustained reads: after B bytes read every rate is multiplied by
	// ThermalFloor + (1 − ThermalFloor)·exp(−B / ThermalBytes). Zero
	// ThermalBytes means no derating (the profile does not state it).
	ThermalFloor float64 `json:"thermal_floor,omitempty"`
	ThermalBytes int64   `json:"thermal_bytes,omitempty"`

	// ReadCPUNS and CopyRate are what one read costs the CPU of the lane
	// that issues it, after its transfer: ReadCPUNS per request plus its
	// bytes at CopyRate bytes/s (the copy from the read buffer into the
	// cache; zero: placed directly). The lane is held meanwhile. Zero both:
	// reads cost no CPU (not stated).
	ReadCPUNS int64   `json:"read_cpu_ns,omitempty"`
	CopyRate  float64 `json:"copy_rate,omitempty"`
}

// CurvePoint is one (read size, bytes/s) sample; curves interpolate linearly in
// log2(size) between points and hold flat beyond the ends.
type CurvePoint struct {
	ReadBytes   int64   `json:"read_bytes"`
	BytesPerSec float64 `json:"bytes_per_sec"`
}

// Backends a profile may name.
const (
	BackendCPU = "cpu"
	BackendGPU = "gpu"
)

// Threads is ComputeThreads, or 1 when the profile does not state it.
func (d *Device) Threads() int { return max(d.ComputeThreads, 1) }
