package sim

import (
	"math"

	"github.com/lessim/lessim/devices"
)

// flash is the storage device as a small discrete-event model.
//
// At most lanes reads are in service at once. A read first holds its lane for
// the fixed request latency, then transfers. The k transfers in progress share
// the device: each progresses at min(single(size), aggregate(size)/k) bytes/s,
// recomputed whenever k changes (processor sharing), so lanes past the
// saturation knee add latency, not bandwidth. Waiting reads queue FIFO in two
// classes; demand reads are started before queued prefetches (no preemption).
//
// Event order: the next event is the earliest lane latency end or transfer
// completion; equal times fire in submission order (lower request id first).
type flash struct {
	lanes   int
	latency Time
	single  []devices.CurvePoint
	agg     []devices.CurvePoint

	now    Time
	reqs   []flashReq // request table; ids index it
	free   []int32    // recycled ids
	active []int32    // ids in service, in start order
	demQ   fifo       // waiting demand reads
	preQ   fifo       // waiting prefetch reads

	xfers int    // active requests past their latency
	seq   uint64 // submissions so far

	mark   Time  // time of the last rate change: remaining bytes are as of then
	nextT  Time  // earliest pending event (kept by rerate)
	nextID int32 // its read, -1 when idle

	rates []sizeRate // read size → (single, aggregate) bytes/ns; a read's class indexes it
	cur   []float64  // scratch: each class's rate at the current k (rerate, with derating)
	// byK[c*lanes+k-1] is class c's rate with k transfers in progress and no
	// thermal derating: min(single, aggregate/k), computed once per class.
	byK []float64

	thermalFloor float64 // fraction of cold bandwidth left when hot (0: no derating)
	thermalBytes float64 // bytes read over which ~63% of the drop happens

	// done is called when a read completes, at time f.now.
	done func(id int32, r *flashReq)

	// accounting
	bytesRead int64
	reads     int64
	busyNS    Time // time with at least one transfer in progress
}

type flashReq struct {
	// Hot: read at every event (kept within the first cache line).
	eta       Time    // next event: latency end, or completion at the current rate
	seq       uint64  // submission order, the tie-break
	remaining float64 // bytes left to transfer
	rate      float64 // current bytes/ns
	class     int32   // index of this read's size in flash.rates
	inXfer    bool
	sync      bool // the caller waits on this id and releases it itself
	finished  bool
	demand    bool

	key       Key // expert the read belongs to, or -1
	bytes     int64
	submit    Time
	start     Time // lane acquired
	xferStart Time // latency over, transfer begins
	finish    Time
}

type fifo struct {
	buf  []int32
	head int
}

func (q *fifo) push(id int32) { q.buf = append(q.buf, id) }
func (q *fifo) len() int      { return len(q.buf) - q.head }
func (q *fifo) pop() int32 {
	id := q.buf[q.head]
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return id
}

func newFlash(f devices.Flash) *flash {
	return &flash{
		lanes:   f.Lanes,
		latency: f.LatencyNS,
		single:  f.SingleLane,
		agg:     f.Aggregate,
		nextT:   math.MaxInt64,
		nextID:  -1,

		thermalFloor: f.ThermalFloor,
		thermalBytes: float64(f.ThermalBytes),
	}
}

// heat is the bandwidth factor after the bytes read so far:
// floor + (1 − floor)·exp(−read / thermalBytes), or 1 without derating.
// NB: rates change only at rerate, so the factor is piecewise constant
// between flash events.
func (f *flash) heat() float64 {
	if f.thermalBytes <= 0 {
		return 1
	}
	return f.thermalFloor + (1-f.thermalFloor)*math.Exp(-float64(f.bytesRead)/f.thermalBytes)
}

// classOf returns the class of reads of size b: its index in f.rates, which
// holds the size's (single-lane, aggregate) bytes per ns. A run reads only a
// few distinct sizes (one per layer size or region), so a short slice
// searched linearly beats a map.
func (f *flash) classOf(b int64) int32 {
	for i := range f.rates {
		if f.rates[i].size == b {
			return int32(i)
		}
	}
	r := [2]float64{devices.Interp(f.single, b) / 1e9, devices.Interp(f.agg, b) / 1e9}
	f.rates = append(f.rates, sizeRate{b, r})
	f.cur = append(f.cur, 0)
	for k := 1; k <= f.lanes; k++ {
		f.byK = append(f.byK, shareRate(r, float64(k)))
	}
	return int32(len(f.rates) - 1)
}

// shareRate is one transfer's bytes/ns with k transfers in progress, for a
// read size's (single-lane, aggregate) rates: min(single, aggregate/k).
func shareRate(c [2]float64, k float64) float64 {
	return min(c[0], float64(c[1]/k))
}

// sizeRate caches one read size's curve rates.
type sizeRate struct {
	size int64
	rate [2]float64
}

// submit queues a read at time f.now and returns its id. The caller must have
// advanced the device to the submission time.
func (f *flash) submit(key Key, bytes int64, demand bool) int32 {
	var id int32
	if n := len(f.free); n > 0 {
		id = f.free[n-1]
		f.free = f.free[:n-1]
	} else {
		f.reqs = append(f.reqs, flashReq{})
		id = int32(len(f.reqs) - 1)
	}
	f.reads++
	f.seq++
	f.bytesRead += bytes
	r := &f.reqs[id]
	*r = flashReq{seq: f.seq, key: key, bytes: bytes, demand: demand, submit: f.now, remaining: float64(bytes), class: f.classOf(bytes)}
	if len(f.active) < f.lanes {
		f.startReq(id)
		if f.latency == 0 {
			f.rerate() // a transfer began: every rate changes
		} else if r.eta < f.nextT {
			// NB: only the latency phase began, so no rate changed; ties keep
			// the earlier read, which has the lower seq.
			f.nextT, f.nextID = r.eta, id
		}
	} else if demand {
		f.demQ.push(id)
	} else {
		f.preQ.push(id)
	}
	return id
}

// cancelQueued removes a queued (not started) prefetch of key; it reports
// whether one was found. Bytes of a cancelled read are not counted.
func (f *flash) cancelQueued(id int32) bool {
	q := &f.preQ
	for i := q.head; i < len(q.buf); i++ {
		if q.buf[i] == id {
			copy(q.buf[i:], q.buf[i+1:])
			q.buf = q.buf[:len(q.buf)-1]
			r := &f.reqs[id]
			f.bytesRead -= r.bytes
			f.reads--
			f.free = append(f.free, id)
			return true
		}
	}
	return false
}

func (f *flash) started(id int32) bool {
	for _, a := range f.active {
		if a == id {
			return true
		}
	}
	return f.reqs[id].finished
}

func (f *flash) startReq(id int32) {
	r := &f.reqs[id]
	r.start = f.now
	r.xferStart = f.now + f.latency
	r.eta = r.xferStart
	f.active = append(f.active, id)
	if f.latency == 0 {
		r.inXfer = true
		f.xfers++
	}
}

// rerate recomputes every transfer's rate and completion time after k
// changed, and the next event; f.now must be the current time. Every change
// to the set of reads in service ends with a rerate.
func (f *flash) rerate() {
	elapsed := float64(f.now - f.mark)
	// NB: reads of one size share a class, hence a rate: without derating
	// it comes from the class's table (the same arithmetic, so the same
	// bits); with it, it is computed once per class at the current heat.
	rates, stride, base := f.byK, f.lanes, f.xfers-1
	if f.thermalBytes > 0 && f.xfers > 0 {
		k, h := float64(f.xfers), f.heat()
		for i := range f.rates {
			f.cur[i] = shareRate(f.rates[i].rate, k) * h
		}
		rates, stride, base = f.cur, 1, 0
	}
	best, bestID := Time(math.MaxInt64), int32(-1)
	var bestSeq uint64
	for _, id := range f.active {
		r := &f.reqs[id]
		if r.inXfer {
			// Bring remaining up to date at the old rate (0 for a transfer
			// that has just begun), then set the new rate.
			r.remaining -= float64(r.rate * elapsed)
			r.rate = rates[int(r.class)*stride+base]
			r.eta = f.now + Time(math.Ceil(float64(r.remaining/r.rate)))
		}
		if t := r.eta; t < best || t == best && r.seq < bestSeq {
			best, bestID, bestSeq = t, id, r.seq
		}
	}
	f.nextT, f.nextID = best, bestID
	f.mark = f.now
}

// nextEvent is the time and read of the earliest pending event (ties: the
// read submitted first), or (MaxInt64, -1) when idle.
func (f *flash) nextEvent() (Time, int32) { return f.nextT, f.nextID }

// progress moves the clock to t (no event lies in between), counting busy
// time. Transfers need no update: their completion times stay valid until the
// rates change, and rerate brings remaining bytes up to date then.
func (f *flash) progress(t Time) {
	if dt := t - f.now; dt > 0 {
		if f.xfers > 0 {
			f.busyNS += dt
		}
		f.now = t
	}
}

// advance processes every event at or before t, then moves the clock to t.
func (f *flash) advance(t Time) {
	for {
		ev, id := f.nextEvent()
		if id < 0 || ev > t {
			break
		}
		f.step(ev, id)
	}
	f.progress(t)
}

// step fires one event: id's latency end or completion at time ev.
func (f *flash) step(ev Time, id int32) {
	f.progress(ev)
	r := &f.reqs[id]
	if !r.inXfer {
		r.inXfer = true
		f.xfers++
		f.rerate()
		return
	}
	// Completion. NB: remaining may be a hair above zero from rounding; the
	// event time already rounded up, so the transfer is done.
	r.remaining = 0
	r.inXfer = false
	r.finished = true
	r.finish = ev
	f.xfers--
	for i, a := range f.active {
		if a == id {
			copy(f.active[i:], f.active[i+1:])
			f.active = f.active[:len(f.active)-1]
			break
		}
	}
	switch {
	case f.demQ.len() > 0:
		f.startReq(f.demQ.pop())
	case f.preQ.len() > 0:
		f.startReq(f.preQ.pop())
	}
	f.rerate()
	if f.done != nil {
		f.done(id, r)
	}
}

// release recycles a finished request id once the caller has read it.
func (f *flash) release(id int32) { f.free = append(f.free, id) }
