package sim

import (
	"math"

	"github.com/lessim/lessim/devices"
)

// Cores as a resource (docs/model.md, "Cores and memory bandwidth shared").
//
// A read's CPU work runs on the lane that issued it, after its transfer:
// Device.Flash.ReadCPUNS per request plus its bytes at CopyRate (the copy
// into the cache), the lane held meanwhile (flash.cpuWork). With
// Device.Cores stated, the T compute threads (Device.Threads), the n lanes
// in that CPU phase (plus Device.Flash.TransferCPU for each read
// transferring: the share of a core a transfer keeps busy) and B threads
// of other work (Device.Background) are the runnable threads; when they
// outnumber the C cores they share them:
//
//	lane CPU phase progresses at  min(1, C / (n + T·busy + B))
//	compute progresses at         1 / f / base · dram
//
// With one thread (or more threads than cores) f = max(1, (T + n + B)/C),
// processor sharing. With 2 ≤ T ≤ C threads, which meet at a barrier after
// every operation (spinning while they wait), the operation ends when the
// slowest thread does: the e = n + B − (C − T) threads beyond the free
// cores land on the compute threads' cores, and the busiest core sets the
// pace. f = 1 + min(e, 1) + max(0, e − T)/T (e ≤ 0: 1): one extra thread on
// one core already halves it, and each further T extras add one more share
// (the time average of the busiest core's load when e varies).
//
// busy is whether the compute thread is running (not stalled on a read);
// base is compute's uncontended rate by the same formula with n = B = 0
// (the compute numbers were measured uncontended at T threads), or 1 with
// Device.Parallel (the numbers are one thread's, and T threads take
// (1 − p) + p/T of that: computeModel). dram is the DRAM
// bandwidth compute keeps while the I/O draws on it: 1 − (Σ transfer
// rates + 2 · Σ copy rates) / memory.bandwidth, at least 0.05 (a copy
// reads and writes each byte), applied only when the profile states
// flash.copy_rate (without a copy the reads' DRAM traffic is one DMA
// write per byte, left out). Rates change only at flash events and when
// the compute thread starts or stops, so compute advances piecewise
// between events (engine.contend).

// contention is the flash's share of the core model: set by newEngine.
type contention struct {
	cpuFixed    float64 // ns of CPU per read request (ReadCPUNS)
	xferCPU     float64 // share of a core each transfer in flight keeps busy (TransferCPU)
	copyPerByte float64 // ns of CPU per byte copied (1e9/CopyRate), 0: no copy
	cores       float64 // 0: unlimited (no contention)
	threads     float64
	background  float64 // runnable threads of other work
	base        float64 // compute's uncontended share (see above)
	memBW       float64 // bytes/ns of DRAM bandwidth
	busy        bool    // the compute thread is running
	ncpu        int     // reads in their CPU phase
}

// newContention reads the device's core model; cpuPhase reports whether
// reads have a CPU phase at all.
func newContention(d *devices.Device) (c contention, cpuPhase bool) {
	c.cpuFixed = float64(d.Flash.ReadCPUNS)
	c.xferCPU = d.Flash.TransferCPU
	if d.Flash.CopyRate > 0 {
		c.copyPerByte = 1e9 / d.Flash.CopyRate
	}
	c.threads = float64(d.Threads())
	c.cores = float64(d.Cores)
	c.background = d.Background
	c.base = 1
	if c.cores > 0 && d.Parallel == 0 {
		c.base = 1 / c.stretch(0, 0)
	}
	c.memBW = d.MemBandwidth / 1e9
	return c, c.cpuFixed > 0 || c.copyPerByte > 0
}

// cpuWork is the CPU time (ns, at a whole core) of a read of bytes.
func (c *contention) cpuWork(bytes int64) float64 {
	return c.cpuFixed + float64(bytes)*c.copyPerByte
}

// ioShare is the core share of a lane in its CPU phase, with xfers reads
// transferring.
func (c *contention) ioShare(xfers int) float64 {
	if c.cores == 0 {
		return 1
	}
	run := c.io(xfers) + c.background
	if c.busy {
		run += c.threads
	}
	return min(1, c.cores/run)
}

// io is the runnable threads the reads make: the lanes in their CPU phase
// and each transfer's share of a core.
func (c *contention) io(xfers int) float64 {
	return float64(c.ncpu) + c.xferCPU*float64(xfers) // NB: exactly ncpu without transfer CPU
}

// stretch is f above: how much longer compute takes with n lanes and b
// other threads runnable than with the cores to itself.
func (c *contention) stretch(n, b float64) float64 {
	t := c.threads
	if t < 2 || t > c.cores {
		return max(1, (t+n+b)/c.cores)
	}
	e := n + b - (c.cores - t)
	if e <= 0 {
		return 1
	}
	return 1 + min(e, 1) + max(0, e-t)/t
}

// computeRate is compute's progress per ns of wall time, now: its core
// share over base, times the DRAM bandwidth the I/O leaves it.
func (f *flash) computeRate() float64 {
	c := &f.cont
	r := 1 / c.stretch(c.io(f.xfers), c.background) / c.base
	if c.copyPerByte == 0 || c.memBW <= 0 {
		return r // NB: DRAM shared only with copies stated (see above)
	}
	var io float64 // bytes/ns the reads draw on DRAM
	for i := range f.svc {
		a := &f.svc[i]
		switch {
		case a.inXfer:
			io += a.rate
		case a.inCPU && c.copyPerByte > 0:
			io += 2 * a.rate / c.copyPerByte
		}
	}
	return r * max(0.05, 1-io/c.memBW)
}

// setBusy records whether the compute thread runs from f.now on; the lanes
// in their CPU phase change speed when it does.
func (f *flash) setBusy(b bool) {
	if f.cont.busy == b {
		return
	}
	f.cont.busy = b
	if f.cont.ncpu > 0 { // NB: only lanes in their CPU phase change speed
		f.rerate()
	}
}

// cpu runs d of compute-thread work (at its uncontended speed) and returns
// the wall time it took: d, or with cores stated, longer while lanes share
// the cores and DRAM (contend).
func (e *engine) cpu(d Time) Time {
	if !e.shared {
		e.now += d
		return d
	}
	return e.contend(d)
}

// contend runs d of compute work against the lanes: between flash events
// the rate is constant (flash.computeRate), so the work advances event by
// event; each event (a transfer ending, a copy beginning or ending) fires
// at its time, as it would have in a later advance.
func (e *engine) contend(d Time) Time {
	start := e.now
	e.fl.advance(e.now)
	e.fl.setBusy(true)
	work := float64(d)
	for work > 0 {
		r := e.fl.computeRate()
		end := e.now + Time(math.Ceil(work/r))
		ev, _ := e.fl.nextEvent()
		if end <= ev {
			e.now = end
			break
		}
		work -= float64(ev-e.now) * r
		e.fl.advance(ev)
		e.now = ev
	}
	return e.now - start
}

// idle marks the compute thread stalled (waiting on a read) from now on.
func (e *engine) idle() {
	if e.shared {
		e.fl.setBusy(false)
	}
}

// predict charges layer l's lookahead router on the CPU backend
// (Device.PredictNS per token) to the compute thread.
func (e *engine) predictCost(tokens int) {
	e.compute(Time(tokens) * e.cfg.Device.PredictNS)
}

// threadScale is the rates of T threads with a parallel share p of one
// thread's memRate and flops (Amdahl): a part takes (1 − p) + p/T of its
// one-thread time. NB: separate from computeModel's per-part formulas.
func threadScale(memRate, flops, p float64, t int) (float64, float64) {
	a := (1 - p) + p/float64(t)
	return memRate / a, flops / a
}
