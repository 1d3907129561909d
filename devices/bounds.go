package devices

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Bound is the plausible range of one profile or model-spec number, with the
// reason for it. Validation, docs/profile-bounds.md and the tests all read
// the one table Bounds returns, so they cannot drift apart.
//
// Field is the dotted path as Validate reports it; "flash.*[]" stands for
// every point of both flash curves and "model.layers[]" for every MoE layer.
// Min and Max are written as a profile writes them ("1 GB/s"), parsed with
// Kind; counts and FLOPs are Dimensionless and name their Unit.
type Bound struct {
	Field      string
	Kind       Kind
	Min, Max   string
	Unit       string // unit of a Dimensionless bound, for people ("FLOP", "experts")
	Whole      bool   // must be a whole number
	PowerOfTwo bool   // must be a power of two
	Reason     string

	lo, hi float64 // Min and Max in SI base units
}

// Range returns Min and Max in SI base units (bytes, bytes/s, ns, FLOP/s).
func (b Bound) Range() (lo, hi float64) { return b.lo, b.hi }

// Contains reports whether v (SI base units) satisfies the bound: finite,
// within [Min, Max], and whole or a power of two where the bound says so.
func (b Bound) Contains(v float64) bool {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v < b.lo || v > b.hi:
		return false
	case b.Whole && v != math.Trunc(v):
		return false
	case b.PowerOfTwo && (v != math.Trunc(v) || v < 1 || int64(v)&(int64(v)-1) != 0):
		return false
	}
	return true
}

// RangeText is the range as messages and docs show it: "[1 GB/s, 10 TB/s]",
// with "whole" or "a power of two" added where the bound says so.
func (b Bound) RangeText() string {
	unit := ""
	if b.Unit != "" {
		unit = " " + b.Unit
	}
	s := fmt.Sprintf("[%s, %s]%s", b.Min, b.Max, unit)
	switch {
	case b.PowerOfTwo:
		s += ", a power of two"
	case b.Whole:
		s += ", whole"
	}
	return s
}

// check returns the problem with v (written as text) or "" when v fits.
func (b Bound) check(v float64, text string) string {
	if b.Contains(v) {
		return ""
	}
	t := strings.TrimSpace(text)
	if v >= b.lo && v <= b.hi { // NB: false for NaN; ±Inf is beyond every bound
		what := "a whole number"
		if b.PowerOfTwo {
			what = "a power of two"
		}
		return fmt.Sprintf("%s is not %s (want %s): %s", t, what, b.RangeText(), b.Reason)
	}
	return fmt.Sprintf("%s is outside %s: %s", t, b.RangeText(), b.Reason)
}

// transferRateField names the one bound on a value derived from a profile
// rather than written in it: each flash curve point's transfer rate once the
// latency is removed.
const transferRateField = "flash.*[].transfer_rate"

// boundTable is the one table of plausible ranges. Each reason cites a device
// class or the physics behind the ends. NB: the ends also keep simulated time
// exact: see TestWorstCaseConversions and docs/profile-bounds.md.
var boundTable = []Bound{
	// Profile: memory.
	{Field: "memory.ram", Kind: Size, Min: "256 MiB", Max: "16 TiB",
		Reason: "256 MiB is the smallest RAM that holds an OS and an LLM runtime (old embedded boards); 16 TiB covers large 8-socket servers, far beyond any device that streams experts from flash"},
	{Field: "memory.reserve", Kind: Size, Min: "0 B", Max: "16 TiB",
		Reason: "0 when nothing else needs memory; it can never exceed RAM (at most 16 TiB) and must also be less than memory.ram"},
	{Field: "memory.bandwidth", Kind: Rate, Min: "1 GB/s", Max: "10 TB/s",
		Reason: "single-channel DDR or LPDDR on old embedded boards gives 1-3 GB/s; HBM3e accelerators (8 TB/s on one GPU) are the fastest memory a decoder reads"},
	{Field: "memory.efficiency", Kind: Dimensionless, Min: "0.01", Max: "1", Unit: "of peak",
		Reason: "a fraction of peak bandwidth: above 1 is impossible; decode kernels reach 30-90%, and below 1% memory would not be the bottleneck this model assumes"},
	{Field: "memory.app_limit", Kind: Size, Min: "64 MiB", Max: "16 TiB",
		Reason: "the memory the OS lets one app keep resident: iOS's jetsam limits run from a few hundred MiB on old phones to several GiB with the increased-memory-limit entitlement; it can never exceed RAM (checked against memory.ram too)"},
	{Field: "memory.runtime", Kind: Size, Min: "0 B", Max: "16 TiB",
		Reason: "the app's own memory besides the model (runtime, compute buffers, UI): tens to hundreds of MiB; it counts against memory.app_limit, which is at most RAM"},
	{Field: "memory.growth", Kind: Size, Min: "1 B", Max: "1 GiB",
		Reason: "what the footprint grows by per token besides the KV cache (page cache the kernel keeps): bytes to megabytes; a GiB per token would exhaust any phone in a few tokens"},
	// Profile: compute.
	{Field: "compute.flops", Kind: Throughput, Min: "1 GFLOPS", Max: "10 PFLOPS",
		Reason: "one in-order embedded core sustains about 1 GFLOPS; the largest accelerators reach a few PFLOPS dense (about 4.5 PFLOPS FP8 on a B200)"},
	{Field: "compute.pass_scale", Kind: Dimensionless, Min: "0.05", Max: "5", Unit: "of one token's",
		Reason: "one token of a batched pass costs from about 1/n of a one-token pass (weights read once, GPUs) to a little more than one (CPU kernels, every row an output: 1.1-1.3 measured here); 5 times one token's would mean batching breaks the kernel"},
	{Field: "compute.layer_overhead", Kind: Duration, Min: "0 ns", Max: "100 ms",
		Reason: "dispatch and synchronisation cost microseconds per layer; 100 ms per layer would spend seconds per token before any work"},
	{Field: "compute.load_fixed", Kind: Duration, Min: "0 ns", Max: "10 ms",
		Reason: "allocating, committing and booking one expert costs microseconds of CPU (mmap/madvise calls, page-table updates); 10 ms per load would dwarf its read"},
	{Field: "compute.load_rate", Kind: Rate, Min: "100 MB/s", Max: "1 TB/s",
		Reason: "the compute thread touches loaded bytes at memory-copy speed: 1-50 GB/s on phones and laptops (the BigMoeOnEdge phone run's management time grows 0.12 ms per MB read, about 8 GB/s); below 100 MB/s copying would be slower than the flash read itself"},
	{Field: "compute.threads", Kind: Dimensionless, Min: "1", Max: "256", Unit: "threads", Whole: true,
		Reason: "llama.cpp runs 1 to a few dozen compute threads (phones 4-8 big cores, servers up to a few hundred); more would mean threads without a core"},
	{Field: "compute.gpu_sync", Kind: Duration, Min: "1 us", Max: "10 ms",
		Reason: "committing a GPU command buffer and waiting for it costs tens of microseconds (Metal, CUDA, Vulkan); below 1 us no host-device round trip exists, and 10 ms per layer would be a stalled driver"},
	{Field: "compute.cores", Kind: Dimensionless, Min: "1", Max: "1024", Unit: "cores", Whole: true,
		Reason: "the cores the compute threads and I/O lanes run on: phones have 6-10, laptops 8-24, servers a few hundred"},
	{Field: "compute.background", Kind: Dimensionless, Min: "0.01", Max: "8", Unit: "threads",
		Reason: "the mean runnable threads of other work on the cores: a fraction of one on an idle phone, a few on a shared machine; with more than 8 the engine would barely run"},
	{Field: "compute.parallel", Kind: Dimensionless, Min: "0.01", Max: "1", Unit: "of compute",
		Reason: "a fraction of the compute that splits over threads: at most all of it; below 1% threads would not matter and the field should be left out"},
	{Field: "compute.thread_overhead", Kind: Duration, Min: "0 ns", Max: "100 ms",
		Reason: "waking and joining a compute thread at each split of a layer's graph costs microseconds; on cores shared with other runnable threads a spinning barrier can wait a scheduler slice (milliseconds); 100 ms per layer would be a stalled machine"},
	{Field: "compute.draft_token", Kind: Duration, Min: "1 us", Max: "10 s",
		Reason: "one greedy token of a draft model: tens of microseconds for a tiny model on a GPU to a few hundred milliseconds for a billion parameters on one phone core; 10 s per draft token would make any drafter slower than the target"},
	{Field: "compute.draft_bytes", Kind: Size, Min: "1 B", Max: "16 TiB",
		Reason: "the draft model's weight bytes read per token, which identify the drafter the time was measured on: a drafter's weights fit in RAM, at most 16 TiB (the bound of memory.ram)"},
	{Field: "compute.predict_cost", Kind: Duration, Min: "0 ns", Max: "10 ms",
		Reason: "one lookahead router matmul (hidden × experts weights) per layer and token takes microseconds on a CPU; 10 ms would exceed a layer's decode"},
	// Profile: flash.
	{Field: "flash.lanes", Kind: Dimensionless, Min: "1", Max: "1024", Unit: "reads", Whole: true,
		Reason: "at least one read must be in flight; UFS queues 32 commands and NVMe engines keep at most a few hundred reads in flight per device"},
	{Field: "flash.latency", Kind: Duration, Min: "1 us", Max: "100 ms",
		Reason: "no storage answers a request faster than about 1 us (3D XPoint and XL-Flash take 5-10 us, TLC NAND 50-100 us); 100 ms covers SD cards and spun-down disks"},
	{Field: "flash.page_size", Kind: Size, Min: "4 KiB", Max: "2 MiB", PowerOfTwo: true,
		Reason: "MMU pages are powers of two: 4 KiB on x86 and most ARM, 16 KiB on Apple, 64 KiB on some ARM64 kernels, 2 MiB huge pages"},
	{Field: "flash.read_ahead", Kind: Size, Min: "0 B", Max: "64 MiB",
		Reason: "0 is MADV_RANDOM; Linux read_ahead_kb defaults to 128 KiB and is rarely raised beyond a few MiB"},
	{Field: "flash.read_ahead_async", Kind: Size, Min: "4 KiB", Max: "64 MiB",
		Reason: "the kernel reads ahead at least a page; Linux's ra_pages defaults to 128 KiB and is rarely raised beyond a few MiB"},
	{Field: "flash.fault_cost", Kind: Duration, Min: "0 ns", Max: "1 ms",
		Reason: "a page fault costs 0.1-10 us of CPU besides its I/O; a millisecond would be a pathological kernel"},
	{Field: "flash.thermal_floor", Kind: Dimensionless, Min: "0.05", Max: "1", Unit: "of cold bandwidth",
		Reason: "a fraction of the cold bandwidth: a hot UFS 4 phone held 1645 of 2460 MiB/s (0.67, DESIGN.md); below 5% the device would be throttling to a stop"},
	{Field: "flash.read_cpu", Kind: Duration, Min: "0 ns", Max: "10 ms",
		Reason: "a read request costs microseconds of CPU (system call, submission, completion; with a buffered read, page-cache allocation); 10 ms would be slower than the read itself"},
	{Field: "flash.copy_rate", Kind: Rate, Min: "100 MB/s", Max: "1 TB/s",
		Reason: "a copy from a read buffer into the cache runs at memory-copy speed, 1-50 GB/s on phones and laptops; below 100 MB/s it would be slower than flash"},
	{Field: "flash.thermal_bytes", Kind: Size, Min: "1 MiB", Max: "16 TiB",
		Reason: "how many bytes read heat the flash: phones heat over seconds to minutes of sustained reads (gigabytes); 16 TiB is effectively never"},
	{Field: "flash.*[].read", Kind: Size, Min: "512 B", Max: "1 GiB",
		Reason: "512 B is the smallest sector a block device reads; beyond 1 GiB per read nothing new is measured (the curve holds flat past its last point)"},
	{Field: "flash.*[].lanes", Kind: Dimensionless, Min: "1", Max: "1024", Unit: "reads", Whole: true,
		Reason: "the reads in flight during the measurement, within flash.lanes' range"},
	{Field: "flash.*[].bandwidth", Kind: Rate, Min: "1 MB/s", Max: "100 GB/s",
		Reason: "SD cards and eMMC read small random blocks at a few MB/s; several PCIe 5.0 NVMe drives striped reach about 60 GB/s"},
	{Field: transferRateField, Kind: Rate, Min: "1 MB/s", Max: "1 TB/s",
		Reason: "derived, not written: a point's size over its time per read minus flash.latency; no storage link moves data faster than DRAM, so a higher rate means the point is barely slower than the latency"},

	// Model specs.
	{Field: "model.blocks", Kind: Dimensionless, Min: "1", Max: "1024", Unit: "blocks", Whole: true,
		Reason: "transformer blocks: the deepest published LLMs have about 126 (Llama 3.1 405B)"},
	{Field: "model.layers", Kind: Dimensionless, Min: "1", Max: "1024", Unit: "MoE layers", Whole: true,
		Reason: "MoE layers are some of the blocks: 48 in Qwen3-30B-A3B, 58 in DeepSeek-V3"},
	{Field: "model.experts", Kind: Dimensionless, Min: "1", Max: "4096", Unit: "experts", Whole: true,
		Reason: "routed experts per layer: 8 (Mixtral) to 512 (Qwen3-Next) in released models; 4096 leaves room for finer-grained research models"},
	{Field: "model.top_k", Kind: Dimensionless, Min: "1", Max: "64", Unit: "experts", Whole: true,
		Reason: "experts used per token: 1 (Switch) to 10 (Qwen3-Next) in released models; it must also be at most experts"},
	{Field: "model.shared_experts", Kind: Dimensionless, Min: "0", Max: "64", Unit: "experts", Whole: true,
		Reason: "always-on experts: 0 to 4 in released models (DeepSeek-V2 2, Qwen1.5-MoE 4)"},
	{Field: "model.hidden", Kind: Dimensionless, Min: "1", Max: "65536", Unit: "weights", Whole: true,
		Reason: "model width: 16384 in Llama 3.1 405B, 18432 in Nemotron-4 340B; toy test models use 32"},
	{Field: "model.expert_ffn", Kind: Dimensionless, Min: "1", Max: "131072", Unit: "weights", Whole: true,
		Reason: "one expert's FFN width: 768 (Qwen3-30B-A3B) to 32768 (Grok-1)"},
	{Field: "model.shared_ffn", Kind: Dimensionless, Min: "0", Max: "131072", Unit: "weights", Whole: true,
		Reason: "the shared experts' FFN width, at most expert_ffn's range"},
	{Field: "model.vocab", Kind: Dimensionless, Min: "0", Max: "1048576", Unit: "tokens", Whole: true,
		Reason: "0 when unknown; 262144 (Gemma) is the largest common vocabulary"},
	{Field: "model.layers[].expert_bytes", Kind: Size, Min: "16 B", Max: "4 GiB",
		Reason: "test models use 100-byte experts and real ones are megabytes; Grok-1's experts (604M weights) are 2.4 GB even at F32"},
	{Field: "model.layers[].dense_bytes", Kind: Size, Min: "0 B", Max: "64 GiB",
		Reason: "one block's attention, router and shared experts: a few GB even for 405B-class models at F32"},
	{Field: "model.layers[].dense_flops_per_token", Kind: Dimensionless, Min: "0", Max: "1e12", Unit: "FLOP",
		Reason: "2 FLOPs per weight: 1e12 is 500 G weights, more than any one block of a released model"},
	{Field: "model.layers[].expert_flops_per_token", Kind: Dimensionless, Min: "0", Max: "1e12", Unit: "FLOP",
		Reason: "2 FLOPs per weight: 1e12 is 500 G weights, far more than any one expert"},
	{Field: "model.head_bytes", Kind: Size, Min: "0 B", Max: "64 GiB",
		Reason: "the output projection: vocab × hidden, 1M × 65536 at 8 bits at most"},
	{Field: "model.head_flops_per_token", Kind: Dimensionless, Min: "0", Max: "1e12", Unit: "FLOP",
		Reason: "2 FLOPs per weight of the output projection (at most 1M × 65536 weights)"},
	{Field: "model.non_expert_bytes", Kind: Size, Min: "0 B", Max: "16 TiB",
		Reason: "resident weights must fit in RAM, at most 16 TiB"},
	{Field: "model.kv_bytes_per_token", Kind: Size, Min: "0 B", Max: "64 MiB",
		Reason: "0 when unknown; 4.5 MiB for GPT-3 175B's F16 cache without grouped queries; 64 MiB leaves room"},
	{Field: "model.layers[].kv_bytes_per_token", Kind: Size, Min: "0 B", Max: "64 MiB",
		Reason: "one attention layer's K and V per context token: 2 KiB (MiniCPM-V 4.7, 2 KV heads of 256 at F16) to 4 KiB (Qwen3-30B-A3B); at most the model's kv_bytes_per_token range"},
	{Field: "model.layers[].attn_flops_per_position", Kind: Dimensionless, Min: "0", Max: "1e9", Unit: "FLOP",
		Reason: "4 × query heads × head_dim (scores and weighted sum): 16384 for Qwen3-30B-A3B and MiniCPM-V 4.7, about 0.4 M for the widest released models"},
	{Field: "model.layers[].state_bytes", Kind: Size, Min: "0 B", Max: "4 GiB",
		Reason: "one recurrent layer's fixed state: about 2.1 MiB for a Gated DeltaNet layer of MiniCPM-V 4.7 (32 heads of 128 × 128 F32 plus the conv window); Mamba-2 layers hold a few MiB"},
	{Field: "model.layers[].state_flops_per_token", Kind: Dimensionless, Min: "0", Max: "1e12", Unit: "FLOP",
		Reason: "the recurrent update's work per token: a few M FLOP for Gated DeltaNet (about 7 × heads × d_k × d_v); 1e12 is far beyond any layer"},
}

// boundIndex finds a table row by field.
var boundIndex = func() map[string]int {
	idx := make(map[string]int, len(boundTable))
	for i := range boundTable {
		b := &boundTable[i]
		var err error
		if b.lo, err = ParseQuantity(b.Min, b.Kind); err == nil {
			b.hi, err = ParseQuantity(b.Max, b.Kind)
		}
		if err != nil || b.lo > b.hi {
			panic(fmt.Sprintf("devices: bound %s: bad range %q..%q: %v", b.Field, b.Min, b.Max, err)) // a typo in the table above
		}
		idx[b.Field] = i
	}
	return idx
}()

// Bounds returns the table of plausible ranges for profile and model-spec
// numbers, in schema order.
func Bounds() []Bound { return slices.Clone(boundTable) }

// BoundOf returns the table row of field (e.g. "memory.ram") and whether it exists.
func BoundOf(field string) (Bound, bool) {
	i, ok := boundIndex[field]
	if !ok {
		return Bound{}, false
	}
	return boundTable[i], true
}

// bound returns the table row of field; a missing row is a bug in this package.
func bound(field string) Bound {
	i, ok := boundIndex[field]
	if !ok {
		panic("devices: no bound for " + field)
	}
	return boundTable[i]
}
