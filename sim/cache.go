package sim

import (
	"fmt"
	"math"
)

// cacheView is the read-only face of the engine shown to policies.
type cacheView struct{ e *engine }

func (v cacheView) State(k Key) Residency       { return v.e.keys[k].state }
func (v cacheView) InUse(k Key) bool            { return v.e.keys[k].seen == v.e.stamp }
func (v cacheView) FreeBytes() int64            { return v.e.capacity - v.e.used }
func (v cacheView) LoadingBytes() int64         { return v.e.loadingBytes }
func (v cacheView) CapacityBytes() int64        { return v.e.capacity }
func (v cacheView) ExpertBytes(layer int) int64 { return v.e.layerBytes[layer] }

func (e *engine) keyBytes(k Key) int64 { return e.layerBytes[int(k)/e.nE] }

// makeRoom evicts policy-chosen victims until need bytes are free. For a
// prefetch it reports false when the policy declines; for a demand load it
// cancels queued prefetches and then waits for in-flight reads before giving up.
func (e *engine) makeRoom(need int64, prefetch bool, step int64) (bool, error) {
	for e.capacity-e.used < need {
		// NB: finish reads due by now first: a completed load is evictable.
		e.fl.advance(e.now)
		v, ok := e.pol.Victim(e.view, need-(e.capacity-e.used), prefetch)
		if ok {
			if err := e.checkVictim(v); err != nil {
				return false, err
			}
			e.evict(v, step)
			continue
		}
		if prefetch {
			return false, nil
		}
		if e.cancelQueuedPrefetch(step) {
			continue
		}
		if !e.waitAnyRead() {
			return false, fmt.Errorf("policy %s declined to evict but %s more are needed and nothing is loading (cache %s)",
				e.pol.Name(), FormatBytes(need-(e.capacity-e.used)), FormatBytes(e.capacity))
		}
	}
	return true, nil
}

func (e *engine) checkVictim(v Key) error {
	if v < 0 || int(v) >= len(e.keys) {
		return fmt.Errorf("policy %s chose victim %d: no such expert", e.pol.Name(), v)
	}
	l, x := v.Split(e.nE)
	switch {
	case e.keys[v].state != Resident:
		return fmt.Errorf("policy %s chose victim layer %d expert %d: not resident", e.pol.Name(), l, x)
	case e.keys[v].seen == e.stamp:
		return fmt.Errorf("policy %s chose victim layer %d expert %d: in use by the current layer", e.pol.Name(), l, x)
	}
	return nil
}

func (e *engine) evict(k Key, step int64) {
	b := e.keyBytes(k)
	e.keys[k].state = Absent
	e.used -= b
	if e.keys[k].prefUnused {
		e.keys[k].prefUnused = false
		if e.measuring {
			e.res.WastedPrefetchBytes += b
		}
	}
	e.pol.Observe(Event{Kind: Evicted, Key: k, Layer: int(k) / e.nE, Step: step})
}

// admit reserves k's bytes and marks it Loading; the caller starts the read.
func (e *engine) admit(k Key, prefetch bool, step int64) (bool, error) {
	ok, err := e.makeRoom(e.keyBytes(k), prefetch, step)
	if !ok || err != nil {
		return false, err
	}
	b := e.keyBytes(k)
	e.keys[k].state = Loading
	e.used += b
	e.loadingBytes += b
	e.res.PeakResidentBytes = max(e.res.PeakResidentBytes, e.used)
	e.pol.Observe(Event{Kind: Admitted, Key: k, Layer: int(k) / e.nE, Step: step, Prefetch: prefetch})
	return true, nil
}

// startAsync issues k's asynchronous read(s): one per expert with the
// per-expert layout, one per tensor region (madvise WILLNEED) with gguf-mmap.
func (e *engine) startAsync(k Key, demand bool) {
	e.fl.advance(e.now)
	l := int(k) / e.nE
	if e.cfg.Layout == LayoutPerExpert {
		e.keyReqs[k][0] = e.fl.submit(k, e.layerBytes[l], demand)
		e.keys[k].pending = 1
		return
	}
	rs := e.regions[l]
	e.keys[k].pending = int8(len(rs))
	for i, b := range rs {
		e.keyReqs[k][i] = e.fl.submit(k, b, demand)
	}
}

// readDone is the flash completion callback.
func (e *engine) readDone(id int32, r *flashReq) {
	if r.demand && e.measuring {
		e.res.DemandQueueWaitNS += r.start - r.submit
	}
	if k := r.key; k >= 0 {
		e.keys[k].pending--
		if e.keys[k].pending == 0 && e.keys[k].state == Loading && !e.keys[k].syncLoad {
			e.keys[k].state = Resident
			e.loadingBytes -= e.keyBytes(k)
		}
	}
	if !r.sync {
		e.fl.release(id)
	}
}

// cancelQueuedPrefetch drops the most recently queued prefetch whose reads
// have not started, freeing its bytes; it reports whether it found one.
func (e *engine) cancelQueuedPrefetch(step int64) bool {
	q := &e.fl.preQ
	for i := len(q.buf) - 1; i >= q.head; i-- {
		k := e.fl.reqs[q.buf[i]].key
		if k < 0 || e.keys[k].state != Loading || e.keys[k].seen == e.stamp {
			continue // not a pending prefetch, or needed by the current layer
		}
		n := int(e.keys[k].pending)
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
		b := e.keyBytes(k)
		e.keys[k].pending = 0
		e.keys[k].state = Absent
		e.used -= b
		e.loadingBytes -= b
		e.pol.Observe(Event{Kind: Evicted, Key: k, Layer: int(k) / e.nE, Step: step})
		return true
	}
	return false
}

// waitAnyRead stalls the compute thread until the next flash event; false when idle.
func (e *engine) waitAnyRead() bool {
	e.fl.advance(e.now)
	ev, id := e.fl.nextEvent()
	if id < 0 || ev == math.MaxInt64 {
		return false
	}
	e.fl.step(ev, id)
	e.stallTo(e.fl.now)
	return true
}

// stallTo moves the compute thread to t, counting the gap as a flash stall.
func (e *engine) stallTo(t Time) {
	if t > e.now {
		if e.measuring {
			e.res.StallNS += t - e.now
			e.res.StallFlashNS += t - e.now
		}
		e.now = t
	}
}

// waitResident stalls until k is resident, faulting it in on the compute
// thread first if it is a pending synchronous (gguf-mmap) load.
func (e *engine) waitResident(k Key) error {
	if e.keys[k].syncLoad {
		e.faultIn(k)
		return nil
	}
	e.fl.advance(e.now)
	for e.keys[k].state != Resident {
		ev, id := e.fl.nextEvent()
		if id < 0 {
			l, x := k.Split(e.nE)
			return fmt.Errorf("internal: layer %d expert %d is loading but no read is in flight", l, x)
		}
		e.fl.step(ev, id)
	}
	e.stallTo(e.fl.now)
	return nil
}

// faultIn reads k through synchronous page faults (stock mmap): each region is
// touched front to back; every fault costs FaultNS of CPU and reads
// max(page, read-ahead) bytes, waiting for the read before continuing.
func (e *engine) faultIn(k Key) {
	f := &e.cfg.Device.Flash
	chunk := max(f.PageBytes, f.ReadAheadBytes)
	for _, region := range e.regions[int(k)/e.nE] {
		for off := int64(0); off < region; off += chunk {
			if e.measuring {
				e.res.StallNS += f.FaultNS
				e.res.StallFaultCPUNS += f.FaultNS
			}
			e.now += f.FaultNS
			e.fl.advance(e.now)
			id := e.fl.submit(-1, chunk, true)
			e.fl.reqs[id].sync = true
			for !e.fl.reqs[id].finished {
				ev, nid := e.fl.nextEvent()
				e.fl.step(ev, nid)
			}
			e.fl.release(id)
			e.stallTo(e.fl.now)
		}
	}
	e.keys[k].syncLoad = false
	e.keys[k].state = Resident
	e.loadingBytes -= e.keyBytes(k)
}
