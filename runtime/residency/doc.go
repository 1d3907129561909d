// Package residency controls which routed experts of a GGUF model are resident in
// RAM while llama.cpp decodes from its own file mapping: the live driver's
// low-level half. It is Linux only (madvise, posix_fadvise, mincore, pread).
//
// # Model
//
// An expert is the set of its regions in the file, one per expert tensor of its
// layer (gate, up, down in stock GGUF; gate_up and down when a converter fused
// them; biases and scales too when present, e.g. gpt-oss): expert tensors are 3-D
// with the expert index slowest, so expert e of a tensor of S bytes at absolute
// offset O is [O + e·S/n, O + (e+1)·S/n) (runtime/gguf's MoE view). Experts are
// named by Expert{Layer, Index}, Layer being the index into the file's MoE layers
// (gguf.MoE.Layers, the same order as devices.ModelSpec.Layers), not the block.
//
// "Resident" means in the page cache, where llama.cpp's mapping finds it without
// I/O (a minor fault at most). The recipe, verified on this kind of machine
// (DESIGN.md "Expert residency"):
//
//   - find llama.cpp's mapping of the file in /proc/self/maps by device and inode
//     (FindMapping), and set MADV_RANDOM on all of it, so a fault reads one page
//     and not the device's read-ahead window (8 MiB here);
//   - once at start, evict every expert tensor whole (EvictAll): the initial load
//     may have left huge pages in the page cache that single-expert eviction does
//     not release;
//   - load an expert by pread of its regions on a separate descriptor opened with
//     POSIX_FADV_RANDOM (the data lands in the page cache; the copy is discarded),
//     then MADV_POPULATE_READ on its pages, which are now in the page cache: no
//     I/O, it only maps them into llama.cpp's mapping, so the expert matmul on
//     the compute thread takes no minor faults (skipped on kernels before 5.14).
//     Not MADV_POPULATE_READ alone: under MADV_RANDOM it reads 4 KiB at a time,
//     about 200× slower;
//   - evict an expert with MADV_DONTNEED on its pages in the mapping (drops this
//     process's page-table entries) and then POSIX_FADV_DONTNEED (drops the now
//     unmapped page-cache pages);
//   - verify with mincore, per expert: the fraction of its pages resident.
//
// Evictions can run off the caller's thread (Evictor): a goroutine that
// drops experts in the order they were handed over. POSIX_FADV_DONTNEED can
// wait for every CPU to drain its page lists (lru_add_drain_all, when a
// lane's CPU still holds the pages), about 1 ms each measured here, which the
// compute thread should not pay. A load of an expert waits for the
// evictions of that expert handed over before it (Evictor.Wait).
//
// # Page alignment
//
// Regions start at multiples of the GGUF alignment (32 bytes), not of the page
// size, so neighbouring regions (another expert, or a dense tensor) can share a
// boundary page. The rule:
//
//   - evict inward: only the pages that lie wholly inside a region are dropped
//     ([roundUp(start), roundDown(end))), so eviction never takes a neighbour's
//     bytes with it; at most two partial pages per region stay resident;
//   - load outward: pread of the exact region brings every page it touches into
//     the page cache, boundary pages included;
//   - measure outward: Resident counts every page the expert's regions touch.
//
// So after an eviction Resident reports at most 2·regions boundary pages, and
// after a load it reports 1.
//
// # I/O lanes
//
// Lanes is a pool of goroutines, each issuing one load at a time: the caller's
// side of "the books hand out reads, the caller reports completions". Submit
// queues a load (demand loads ahead of prefetches), Cancel removes a load that
// has not started, Poll and Wait hand back completions with their bytes and
// durations, Close drops what is queued and waits for the loads in progress.
//
// # Units
//
// Offsets and sizes are bytes; durations are time.Duration (wall clock).
//
// Supported layouts: anything runtime/gguf's MoE view lists — the synthetic
// qwen3moe and olmoe models (separate gate, up, down) are tested here; fused
// gate_up tensors and per-expert bias/scale tensors are handled the same way
// (one more or one fewer region) but not tested on a real file.
package residency
