package sim

import (
	"fmt"
	"math"
)

// The engine is the Books' Loader in the simulator: reads go to the virtual
// flash (flash.go), and completions come back through readDone.
var _ Loader = (*engine)(nil)

// Start issues k's reads: asynchronous ones (one per expert with the
// per-expert layout, one per tensor region, madvise WILLNEED, with gguf-mmap),
// or for a gguf-mmap demand miss a synchronous fault-in when the compute
// thread reaches the expert.
func (e *engine) Start(k Key, demand bool) {
	e.chargeLoad(k)
	ks := &e.bk.keys[k]
	if demand && e.ggufMmap {
		ks.syncLoad = true
		return
	}
	// Asynchronous reads. NB: here, not in a function of their own: one
	// call fewer per read.
	e.fl.advance(e.now)
	l := ks.layer
	if e.perExpert {
		e.keyReqs[k][0] = e.fl.submitClass(k, e.layerBytes[l], e.layerClass[l], demand)
		ks.pending = 1
		return
	}
	rs := e.regions[l]
	ks.pending = int8(len(rs))
	for i, b := range rs {
		e.keyReqs[k][i] = e.fl.submitClass(k, b, e.regionClass[l][i], demand)
	}
}

// chargeLoad spends the compute thread's cost of loading k (memory commit,
// copy, bookkeeping: Device.LoadFixedNS and LoadRate) before its read is
// issued. NB: prefetches pay it too, at moment 1 on the compute thread.
func (e *engine) chargeLoad(k Key) {
	d := e.times.load[e.bk.keys[k].layer]
	if d == 0 {
		return
	}
	d = e.cpu(d)
	e.hi |= e.now // NB: loads per layer have no bound (see pass)
	if e.bk.Measure {
		e.res.LoadCPUNS += d
	}
}

// Drop has nothing to do (a virtual page cache frees nothing) but, with the
// detailed mmap model's neighbours, forget k's resident windows.
func (e *engine) Drop(k Key) {
	if e.mm != nil {
		e.dropWindows(k)
	}
}

// Wait completes the reads due by now; with block it first stalls the
// compute thread until the next flash event.
func (e *engine) Wait(block bool) bool {
	if !block {
		e.fl.advance(e.now)
		return true
	}
	return e.waitAnyRead()
}

// readDone is the flash completion callback.
func (e *engine) readDone(id int32, r *flashReq) {
	if r.demand && e.bk.Measure {
		e.res.DemandQueueWaitNS += r.start - r.submit
	}
	if k := r.key; k >= 0 {
		ks := &e.bk.keys[k]
		ks.pending--
		if ks.pending == 0 && !ks.syncLoad {
			e.bk.Loaded(k)
		}
	} else if e.mm != nil {
		e.windowsDone(id)
	}
	if !r.sync {
		e.fl.release(id)
	}
}

// Cancel drops the most recently queued prefetch whose reads have not
// started, and returns its key.
func (e *engine) Cancel() (Key, bool) {
	q := &e.fl.preQ
	for i := len(q.buf) - 1; i >= q.head; i-- {
		k := e.fl.reqs[q.buf[i]].key
		if k < 0 || e.bk.keys[k].state != Loading || e.bk.InUse(k) {
			continue // not a pending prefetch, or needed by the current layer
		}
		n := int(e.bk.keys[k].pending)
		all := true
		for j := 0; j < n; j++ {
			if e.fl.started(e.keyReqs[k][j]) {
				all = false
			}
		}
		if !all {
			continue
		}
		for j := 0; j < n; j++ {
			e.fl.cancelQueued(e.keyReqs[k][j])
		}
		e.bk.keys[k].pending = 0
		return k, true
	}
	return 0, false
}

// waitAnyRead stalls the compute thread until the next flash event; false when idle.
func (e *engine) waitAnyRead() bool {
	e.fl.advance(e.now)
	e.idle()
	ev, h := e.fl.nextEvent()
	if h < 0 || ev == math.MaxInt64 {
		return false
	}
	e.fl.step(ev, h)
	e.stallTo(e.fl.now)
	return true
}

// stallTo moves the compute thread to t, counting the gap as a flash stall.
func (e *engine) stallTo(t Time) {
	if t > e.now {
		if e.bk.Measure {
			e.res.StallNS += t - e.now
			e.res.StallFlashNS += t - e.now
		}
		e.now = t
	}
}

// waitResident stalls until k is resident, faulting it in on the compute
// thread first if it is a pending synchronous (gguf-mmap) load.
func (e *engine) waitResident(k Key) error {
	if e.bk.keys[k].syncLoad {
		e.faultIn(k)
		return nil
	}
	e.fl.advance(e.now)
	if e.bk.keys[k].state != Resident {
		e.idle()
	}
	for e.bk.keys[k].state != Resident {
		ev, h := e.fl.nextEvent()
		if h < 0 {
			l, x := k.Split(e.nE)
			return fmt.Errorf("internal: layer %d expert %d is loading but no read is in flight", l, x)
		}
		e.fl.step(ev, h)
	}
	e.stallTo(e.fl.now)
	return nil
}

// faultIn reads k through synchronous page faults (stock mmap): each region is
// touched front to back; every fault costs FaultNS of CPU and reads
// max(page, read-ahead) bytes, waiting for the read before continuing.
func (e *engine) faultIn(k Key) {
	if e.mm != nil {
		e.faultInDetailed(k)
		return
	}
	f := &e.cfg.Device.Flash
	chunk := max(f.PageBytes, f.ReadAheadBytes)
	for _, region := range e.regions[e.bk.keys[k].layer] {
		for off := int64(0); off < region; off += chunk {
			e.syncFault(chunk)
		}
	}
	e.bk.keys[k].syncLoad = false
	e.bk.Loaded(k)
}

// syncFault is one synchronous page fault on the compute thread: FaultNS of
// CPU (stall), then a read of bytes through the flash (sharing it with the
// reads in flight), the thread waiting for it.
func (e *engine) syncFault(bytes int64) {
	f := &e.cfg.Device.Flash
	if e.bk.Measure {
		e.res.StallNS += f.FaultNS
		e.res.StallFaultCPUNS += f.FaultNS
	}
	e.now += f.FaultNS
	e.fl.advance(e.now)
	id := e.fl.submit(-1, bytes, true)
	e.fl.reqs[id].sync = true
	e.idle()
	for !e.fl.reqs[id].finished {
		ev, nid := e.fl.nextEvent()
		e.fl.step(ev, nid)
	}
	e.fl.release(id)
	e.stallTo(e.fl.now)
}
