package sim

import (
	"math"
	"slices"

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

	now  Time
	reqs []flashReq // request table; ids index it
	free []int32    // recycled ids
	// svc holds the reads in service (at most lanes), in no particular
	// order: their hot state, kept dense so that rerate walks contiguous
	// memory instead of the request table.
	svc  []inService
	demQ fifo // waiting demand reads
	preQ fifo // waiting prefetch reads

	xfers int    // reads in service past their latency
	seq   uint64 // submissions so far

	mark  Time  // time of the last rate change: remaining bytes are as of then
	nextT Time  // earliest pending event (kept by rerate)
	nextI int32 // its read's index in svc, -1 when idle

	rates []sizeRate // read size → (single, aggregate) bytes/ns; a read's class indexes it
	cur   []float64  // scratch: each class's rate at the current k (rerate, with derating)
	// byK[k*len(rates)+c] is class c's rate with k transfers in progress
	// and no thermal derating: min(single, aggregate/k), computed once per
	// class (so the classes' rates at one k are one row).
	byK []float64

	thermalFloor float64 // fraction of cold bandwidth left when hot (0: no derating)
	thermalBytes float64 // bytes read over which ~63% of the drop happens

	// cpuPhase: a read ends with its CPU work on its lane (cores.go), at
	// the share cont gives it.
	cpuPhase bool
	cont     contention

	// done is called when a read completes, at time f.now; or with eng set,
	// eng.readDone (NB: the engine's callback called directly, not through
	// a method value's wrapper, once per read).
	done func(id int32, r *flashReq)
	eng  *engine

	// accounting
	bytesRead int64
	reads     int64
	busyNS    Time // time with at least one transfer in progress
}

// flashReq is one read's record: what it is and when each phase began.
type flashReq struct {
	seq      uint64 // submission order, the tie-break
	class    int32  // index of this read's size in flash.rates
	sync     bool   // the caller waits on this id and releases it itself
	finished bool
	demand   bool

	key       Key // expert the read belongs to, or -1
	bytes     int64
	submit    Time
	start     Time // lane acquired
	xferStart Time // latency over, transfer begins
	finish    Time
}

// inService is the hot state of a read holding a lane.
type inService struct {
	eta       Time    // next event: latency end, or completion at the current rate
	seq       uint64  // the read's submission order
	remaining float64 // bytes left to transfer
	rate      float64 // current bytes/ns (0 until the transfer begins)
	class     int32
	id        int32
	inXfer    bool
	inCPU     bool // transfer done, the lane's CPU work in progress (cores.go)
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
		nextI:   -1,

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
	// NB: rows are per k, so a new class rebuilds the table (a few times
	// per run); row 0, for no transfer, is zeros and never read.
	nc := len(f.rates)
	f.byK = append(f.byK[:0], make([]float64, nc)...)
	for k := 1; k <= f.lanes; k++ {
		for c := 0; c < nc; c++ {
			f.byK = append(f.byK, shareRate(f.rates[c].rate, float64(k)))
		}
	}
	return int32(nc - 1)
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
	return f.submitClass(key, bytes, f.classOf(bytes), demand)
}

// submitClass is submit for a read whose class (classOf(bytes)) the caller
// looked up once beforehand (NB: the engine's expert reads, one per miss).
func (f *flash) submitClass(key Key, bytes int64, class int32, demand bool) int32 {
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
	// NB: field by field, not a composite literal: the compiler builds a
	// literal on the stack and copies it in wide loads that straddle its
	// narrow stores (a store-forwarding stall per read).
	r := &f.reqs[id]
	r.seq, r.class, r.sync, r.finished, r.demand = f.seq, class, false, false, demand
	r.key, r.bytes, r.submit = key, bytes, f.now
	r.start, r.xferStart, r.finish = 0, 0, 0
	switch {
	case len(f.svc) < f.lanes:
		f.startReq(id)
		if f.latency == 0 {
			f.rerate() // a transfer began: every rate changes
		} else if i := len(f.svc) - 1; f.svc[i].eta < f.nextT {
			// NB: only the latency phase began, so no rate changed; ties keep
			// the earlier read, which has the lower seq.
			f.nextT, f.nextI = f.svc[i].eta, int32(i)
		}
	case demand:
		f.demQ.push(id)
	default:
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
	for i := range f.svc {
		if f.svc[i].id == id {
			return true
		}
	}
	return f.reqs[id].finished
}

// startReq gives read id a lane: its latency begins now.
func (f *flash) startReq(id int32) {
	r := &f.reqs[id]
	r.start = f.now
	r.xferStart = f.now + f.latency
	// NB: fields stored one by one, as in submitClass.
	f.svc = slices.Grow(f.svc, 1)
	f.svc = f.svc[:len(f.svc)+1]
	a := &f.svc[len(f.svc)-1]
	a.eta, a.seq, a.remaining, a.rate = r.xferStart, r.seq, float64(r.bytes), 0
	a.class, a.id, a.inXfer, a.inCPU = r.class, id, f.latency == 0, false
	if f.latency == 0 {
		f.xfers++
	}
}

// rateRow is each class's rate per transfer with the current number of
// transfers in progress (row 0, for none, is never read): index c is class
// c's. NB: the table from the row on, not cut at its end (classes index
// only within it), so that rateRow is cheap enough to inline in rerate.
func (f *flash) rateRow() []float64 {
	if f.thermalBytes > 0 {
		return f.heatRow()
	}
	return f.byK[f.xfers*len(f.rates):]
}

// heatRow is rateRow with thermal derating: the rates move with the heat,
// so they are computed once per class at each rerate.
func (f *flash) heatRow() []float64 {
	if f.xfers == 0 {
		return nil
	}
	k, h := float64(f.xfers), f.heat()
	for i := range f.rates {
		f.cur[i] = shareRate(f.rates[i].rate, k) * h
	}
	return f.cur
}

// rerate recomputes every transfer's rate and completion time after k
// changed, and the next event; f.now must be the current time. Every change
// to the set of reads in service ends with a rerate.
func (f *flash) rerate() {
	// NB: the fields the loop reads in locals: its stores through a could
	// alias them, so the compiler would reload each one every iteration.
	svc, now, rates := f.svc, f.now, f.rateRow()
	elapsed := float64(now - f.mark)
	best, bestI := Time(math.MaxInt64), -1
	var bestSeq uint64
	for i := range svc {
		a := &svc[i]
		if a.inXfer {
			// Bring remaining up to date at the old rate (0 for a transfer
			// that has just begun), then set the new rate.
			a.remaining -= float64(a.rate * elapsed)
			a.rate = rates[a.class]
			a.eta = now + Time(math.Ceil(float64(a.remaining/a.rate)))
		} else if a.inCPU {
			a.remaining -= float64(a.rate * elapsed)
			a.rate = f.cont.ioShare(f.xfers)
			a.eta = now + Time(math.Ceil(float64(a.remaining/a.rate)))
		}
		if t := a.eta; t < best || t == best && a.seq < bestSeq {
			best, bestI, bestSeq = t, i, a.seq
		}
	}
	f.nextT, f.nextI = best, int32(bestI)
	f.mark = now
}

// nextEvent is the time of the earliest pending event (ties: the read
// submitted first) and a handle for step, or (MaxInt64, -1) when idle.
func (f *flash) nextEvent() (Time, int32) { return f.nextT, f.nextI }

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
// NB: small enough to inline: most calls find the clock at t already and no
// event due (nextT is MaxInt64 when idle).
func (f *flash) advance(t Time) {
	if f.nextT <= t || t > f.now {
		f.advanceTo(t)
	}
}

// advanceTo is advance's work, when there is some.
func (f *flash) advanceTo(t Time) {
	for f.nextI >= 0 && f.nextT <= t {
		f.step(f.nextT, f.nextI)
	}
	f.progress(t)
}

// step fires one event at time ev, the one nextEvent named (i): a latency
// end or a completion. It returns the request id of the read concerned.
func (f *flash) step(ev Time, i int32) int32 {
	f.progress(ev)
	a := &f.svc[i]
	if !a.inXfer && !a.inCPU {
		// NB: every read whose latency ends now begins its transfer now, under
		// one rerate. One rerate per read would give the same state: a rerate
		// at an instant already rerated has zero elapsed time, so it leaves
		// every remaining byte count as it was, and the last one sets the
		// rates and completion times these do. (Completions are not batched
		// so: each re-evaluates the others' remaining bytes.)
		for j := range f.svc {
			if b := &f.svc[j]; !b.inXfer && !b.inCPU && b.eta == ev {
				b.inXfer = true
				f.xfers++
			}
		}
		f.rerate()
		return a.id
	}
	if a.inXfer && f.cpuPhase {
		return f.beginCPU(a)
	}
	// Completion. NB: remaining may be a hair above zero from rounding; the
	// event time already rounded up, so the transfer is done.
	id := a.id
	r := &f.reqs[id]
	r.finished = true
	r.finish = ev
	if a.inCPU {
		f.cont.ncpu--
	} else {
		f.xfers--
	}
	// NB: the order of svc is immaterial (rerate's tie-break is seq), so the
	// last read takes the finished one's place.
	last := len(f.svc) - 1
	f.svc[i] = f.svc[last]
	f.svc = f.svc[:last]
	switch {
	case f.demQ.len() > 0:
		f.startReq(f.demQ.pop())
	case f.preQ.len() > 0:
		f.startReq(f.preQ.pop())
	}
	f.rerate()
	if f.eng != nil {
		f.eng.readDone(id, r)
	} else if f.done != nil {
		f.done(id, r)
	}
	return id
}

// release recycles a finished request id once the caller has read it.
func (f *flash) release(id int32) { f.free = append(f.free, id) }

// beginCPU ends a's transfer and starts its CPU phase on its lane
// (cores.go): the read's CPU work at the lane's share of a core.
func (f *flash) beginCPU(a *inService) int32 {
	a.inXfer, a.inCPU = false, true
	f.xfers--
	f.cont.ncpu++
	a.remaining, a.rate = f.cont.cpuWork(f.reqs[a.id].bytes), 0
	f.rerate()
	return a.id
}
