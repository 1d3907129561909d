package sim

// mmapModel is the detailed stock llama.cpp page-fault path (gguf-mmap), on
// when the device has several compute threads, states an asynchronous
// read-ahead, or Config.MmapNeighbours is set; otherwise engine.faultIn keeps
// the simple model (one synchronous chain, nothing credited beyond the region).
//
// Byte layout: GGUF stores each of a layer's expert tensors (gate, up, down)
// with the expert index slowest, so expert x's region of tensor t is bytes
// [x·R_t, (x+1)·R_t) of that tensor, R_t the region's size. Each tensor is
// cut into windows of win = max(page, read_ahead) bytes from its start (the
// kernel's read-around window; Linux centres it on the faulting page, here
// it is aligned to the tensor, a stated approximation). A window is absent,
// in flight (a read's id) or resident.
//
// A miss is faulted in region by region (gate, up, down: llama.cpp runs one
// matmul per tensor with a barrier after each). Within a region, thread i of
// T touches bytes [x·R + i·R/T, x·R + (i+1)·R/T) front to back, all threads
// at once in virtual time. Touching a window that is not resident costs the
// thread fault_cost of CPU; then, if the window is absent, the thread submits
// a synchronous read of it and waits; if it is in flight (another thread's
// fault or a read-ahead), it waits for that read. After every window that
// needed I/O, the thread triggers the kernel's asynchronous read-ahead: one
// read of the absent windows among the next `ahead` windows (ahead =
// ceil(read_ahead_async / win); 0 = none), reaching past the region into the
// next expert's bytes. The region is done when its slowest thread is, so the
// stall is the slowest thread's chain, not the sum of all faults.
//
// Neighbours (keep): windows stay resident after the fault, so the bytes a
// read brought in beyond the faulting expert can serve later faults, and an
// expert whose every window of every tensor is resident becomes resident in
// the Books (Books.Arrived, admitted like a prefetch, never evicting an
// expert in use). Evicting an expert clears its windows. Without keep, the
// windows are scratch for one fault-in (a generation counter forgets them),
// and bytes beyond the region are read and counted but never credited.
// Approximations: reads issued by prefetches (madvise WILLNEED) do not mark
// windows; the bytes of absent experts are not charged to the cache, and are
// forgotten when they have gone a whole pass unheld and untouched (sweepWindows).
type mmapModel struct {
	win     int64 // window bytes
	ahead   int   // windows read ahead asynchronously after a window that needed I/O
	threads int
	fault   Time
	keep    bool   // neighbours: windows persist and complete experts become resident
	gen     uint32 // window states of another generation are absent

	tensors [][]tensorWins // per layer, per tensor (allocated on first fault)
	reqWins []winSpan      // by flash request id: the windows a read covers
	loose   [][]looseWin   // per layer: windows reads made resident, to sweep (keep only)
	cand    []Key          // experts a finished read may have completed (keep only)
	spare   []Key
	th      []faultThread
}

// Window states besides a read's id.
const (
	winAbsent   int32 = -1
	winResident int32 = -2
	winStale    int32 = -3 // resident, held by no expert at the last sweep
)

// resident reports whether a window state holds the bytes.
func resident(st int32) bool { return st == winResident || st == winStale }

// tensorWins are one tensor's window states; state[w] is valid only when
// gen[w] equals the model's generation (else absent).
type tensorWins struct {
	state  []int32
	gen    []uint32
	listed []bool // in the layer's loose list
	bytes  int64  // the tensor's size: experts × region
}

// looseWin names one window of a layer: tensor and index.
type looseWin struct{ t, w int32 }

// winSpan is what one window read covers.
type winSpan struct {
	layer, tensor int32
	lo, hi        int32 // windows [lo, hi)
	gen           uint32
	live          bool
}

// faultThread is one compute thread's fault chain through its slice of a region.
type faultThread struct {
	w, end  int64 // next window, one past the last
	ready   Time  // when the thread can act next
	wait    int32 // read it sleeps on, or -1
	faulted bool  // fault_cost already paid for window w
	io      bool  // window w needed I/O (triggers read-ahead)
	faults  int64
}

// newMmapModel returns the detailed model when cfg asks for any part of it, else nil.
func newMmapModel(cfg *Config, nL int) *mmapModel {
	if cfg.Layout != LayoutGGUFMmap {
		return nil
	}
	f := &cfg.Device.Flash
	threads := cfg.Device.Threads()
	if threads <= 1 && f.ReadAheadAsyncBytes <= 0 && !cfg.MmapNeighbours {
		return nil
	}
	m := &mmapModel{
		win: max(f.PageBytes, f.ReadAheadBytes), threads: threads, fault: f.FaultNS,
		keep: cfg.MmapNeighbours, gen: 1, tensors: make([][]tensorWins, nL),
	}
	if m.keep {
		m.loose = make([][]looseWin, nL)
	}
	if a := f.ReadAheadAsyncBytes; a > 0 {
		m.ahead = int((a + m.win - 1) / m.win)
	}
	return m
}

// get is window w's state.
func (m *mmapModel) get(tw *tensorWins, w int64) int32 {
	if tw.gen[w] != m.gen {
		return winAbsent
	}
	return tw.state[w]
}

func (m *mmapModel) set(tw *tensorWins, w int64, s int32) {
	tw.gen[w], tw.state[w] = m.gen, s
}

// wins returns layer l's tensor t windows, allocating them on first use.
func (e *engine) wins(l, t int) *tensorWins {
	m := e.mm
	if m.tensors[l] == nil {
		m.tensors[l] = make([]tensorWins, len(e.regions[l]))
	}
	tw := &m.tensors[l][t]
	if tw.state == nil {
		tw.bytes = int64(e.nE) * e.regions[l][t]
		n := (tw.bytes + m.win - 1) / m.win
		tw.state, tw.gen = make([]int32, n), make([]uint32, n)
		if m.keep {
			tw.listed = make([]bool, n)
		}
	}
	return tw
}

// readWindows submits one read of windows [lo, hi) of layer l's tensor t
// (clipped to the tensor's end) and marks them in flight.
func (e *engine) readWindows(l, t int, tw *tensorWins, lo, hi int64, demand bool) int32 {
	m := e.mm
	bytes := min(hi*m.win, tw.bytes) - lo*m.win
	id := e.fl.submit(-1, bytes, demand)
	for w := lo; w < hi; w++ {
		m.set(tw, w, id)
	}
	for int(id) >= len(m.reqWins) {
		m.reqWins = append(m.reqWins, winSpan{})
	}
	m.reqWins[id] = winSpan{layer: int32(l), tensor: int32(t), lo: int32(lo), hi: int32(hi), gen: m.gen, live: true}
	return id
}

// windowsDone marks a finished window read's windows resident (when they
// still wait on it) and, with neighbours, queues the experts they touch.
func (e *engine) windowsDone(id int32) {
	m := e.mm
	if int(id) >= len(m.reqWins) || !m.reqWins[id].live {
		return
	}
	s := &m.reqWins[id]
	s.live = false
	if s.gen != m.gen {
		return // an earlier fault-in's read-ahead: read and counted, not credited
	}
	tw := &m.tensors[s.layer][s.tensor]
	for w := int64(s.lo); w < int64(s.hi); w++ {
		if m.get(tw, w) == id {
			m.set(tw, w, winResident)
			if m.keep && !tw.listed[w] {
				tw.listed[w] = true
				m.loose[s.layer] = append(m.loose[s.layer], looseWin{s.tensor, int32(w)})
			}
		}
	}
	if !m.keep {
		return
	}
	r := e.regions[s.layer][s.tensor]
	lo, hi := int64(s.lo)*m.win, min(int64(s.hi)*m.win, tw.bytes)
	for x := lo / r; x <= (hi-1)/r; x++ {
		m.cand = append(m.cand, Key(int(s.layer)*e.nE+int(x)))
	}
}

// readAhead is the kernel's asynchronous read-ahead after window w needed
// I/O: one read of the absent windows among w+1 .. w+ahead, from the first
// absent one up to the next window that is not absent.
func (e *engine) readAhead(l, t int, tw *tensorWins, w int64) {
	m := e.mm
	end := min(w+1+int64(m.ahead), int64(len(tw.state)))
	lo := w + 1
	for lo < end && m.get(tw, lo) != winAbsent {
		lo++
	}
	hi := lo
	for hi < end && m.get(tw, hi) == winAbsent {
		hi++
	}
	if hi > lo {
		e.readWindows(l, t, tw, lo, hi, false)
	}
}

// faultInDetailed faults k in region by region with the detailed model,
// charging the stall (the slowest thread's chain per region). Neighbours it
// completed are admitted at the next layer's moment 1, after the policy's prefetches
// (admitNeighbours), when nothing is in use.
func (e *engine) faultInDetailed(k Key) {
	m := e.mm
	l, x := k.Split(e.nE)
	if !m.keep {
		m.gen++ // forget the previous fault-in's windows
	}
	for t := range e.regions[l] {
		start := e.now
		faults := e.faultRegion(l, t, x)
		if e.bk.Measure {
			cpu := faults * m.fault
			e.res.StallNS += e.now - start
			e.res.StallFaultCPUNS += cpu
			e.res.StallFlashNS += e.now - start - cpu
		}
	}
	e.bk.keys[k].syncLoad = false
	e.bk.Loaded(k)
}

// faultRegion runs the threads' fault chains through expert x's region of
// tensor t of layer l, moves the compute thread to when the slowest is done
// and returns that thread's fault count.
func (e *engine) faultRegion(l, t, x int) int64 {
	m := e.mm
	r := e.regions[l][t]
	tw := e.wins(l, t)
	a, n := int64(x)*r, int64(m.threads)
	ths := m.th[:0]
	for i := int64(0); i < n; i++ {
		lo, hi := a+i*r/n, a+(i+1)*r/n
		if hi > lo {
			ths = append(ths, faultThread{w: lo / m.win, end: (hi-1)/m.win + 1, ready: e.now, wait: -1})
		}
	}
	m.th = ths
	e.fl.advance(e.now)
	for {
		best, waiting := -1, false
		for i := range ths {
			th := &ths[i]
			waiting = waiting || th.wait >= 0
			if th.wait < 0 && th.w < th.end && (best < 0 || th.ready < ths[best].ready) {
				best = i
			}
		}
		ev, h := e.fl.nextEvent()
		if best < 0 || h >= 0 && ev <= ths[best].ready {
			// NB: flash events at a time fire before a thread acts at it.
			if !waiting && best < 0 || h < 0 {
				break // every thread is done (read-aheads may still be in flight)
			}
			id := e.fl.step(ev, h)
			for i := range ths {
				if ths[i].wait == id {
					ths[i].wait, ths[i].ready = -1, max(ths[i].ready, e.fl.now)
				}
			}
			continue
		}
		th := &ths[best]
		e.fl.advance(th.ready)
		switch st := m.get(tw, th.w); {
		case resident(st):
			m.set(tw, th.w, winResident) // touched: fresh again
			if th.io && m.ahead > 0 {
				e.readAhead(l, t, tw, th.w)
			}
			th.w++
			th.faulted, th.io = false, false
		case !th.faulted:
			th.faulted, th.io = true, true
			th.faults++
			th.ready += m.fault
		case st >= 0:
			th.wait = st
		default:
			th.wait = e.readWindows(l, t, tw, th.w, th.w+1, true)
		}
	}
	// The region ends with its slowest thread (ties: the lower index).
	crit := 0
	for i := range ths {
		if ths[i].ready > ths[crit].ready {
			crit = i
		}
	}
	end, faults := max(e.now, ths[crit].ready), ths[crit].faults
	e.now = end
	e.fl.advance(e.now)
	return faults
}

// admitNeighbours makes resident, in the Books, the queued experts whose
// every window is now resident, then forgets layer l's resident windows
// that belong to no resident or loading expert (neighbours only).
func (e *engine) admitNeighbours(l int) error {
	m := e.mm
	if m == nil || !m.keep {
		return nil
	}
	if err := e.admitCandidates(); err != nil {
		return err
	}
	e.sweepWindows(l)
	return nil
}

// sweepWindows ages the windows reads made resident in layer l that overlap
// no resident or loading expert: fresh ones become stale, stale ones (unheld
// and untouched for a whole pass) are forgotten. A window that is absent or
// held by a resident expert leaves the list: its holder's eviction clears it
// (dropWindows); one overlapping a loading expert stays, unaged.
// NB: this bounds the bytes held for absent experts, which the cache does
// not charge, to about two passes' reads: the kernel reclaims such unmapped
// page-cache pages first.
func (e *engine) sweepWindows(l int) {
	m := e.mm
	base := l * e.nE
	kept := m.loose[l][:0]
	for _, lw := range m.loose[l] {
		tw, w, r := &m.tensors[l][lw.t], int64(lw.w), e.regions[l][lw.t]
		st := m.get(tw, w)
		held, loading := false, false
		for x := w * m.win / r; resident(st) && x <= (min((w+1)*m.win, tw.bytes)-1)/r && !held; x++ {
			switch e.bk.keys[base+int(x)].state {
			case Resident:
				held = true
			case Loading:
				loading = true // may yet be cancelled: look again next pass
			}
		}
		switch {
		case !resident(st) || held:
		case loading:
			kept = append(kept, lw)
			continue
		case st == winResident:
			m.set(tw, w, winStale)
			kept = append(kept, lw)
			continue
		default:
			m.set(tw, w, winAbsent)
		}
		tw.listed[w] = false
	}
	m.loose[l] = kept
}

// admitCandidates admits the queued experts that are wholly resident.
func (e *engine) admitCandidates() error {
	m := e.mm
	if len(m.cand) == 0 {
		return nil
	}
	c := m.cand
	m.cand = m.spare[:0]
	for _, k := range c {
		if e.bk.keys[k].state != Absent || !e.covered(k) {
			continue
		}
		if _, err := e.bk.Arrived(k); err != nil {
			return err
		}
	}
	m.spare = c[:0]
	return nil
}

// covered reports whether every window of every region of k is resident.
func (e *engine) covered(k Key) bool {
	m := e.mm
	l, x := k.Split(e.nE)
	if m.tensors[l] == nil {
		return false
	}
	for t, r := range e.regions[l] {
		tw := &m.tensors[l][t]
		if tw.state == nil {
			return false
		}
		for w := int64(x) * r / m.win; w <= (int64(x+1)*r-1)/m.win; w++ {
			if !resident(m.get(tw, w)) {
				return false
			}
		}
	}
	return true
}

// dropWindows forgets the resident windows of evicted expert k (neighbours
// only): the kernel frees its pages.
func (e *engine) dropWindows(k Key) {
	m := e.mm
	l, x := k.Split(e.nE)
	if !m.keep || m.tensors[l] == nil {
		return
	}
	for t, r := range e.regions[l] {
		tw := &m.tensors[l][t]
		if tw.state == nil {
			continue
		}
		for w := int64(x) * r / m.win; w <= (int64(x+1)*r-1)/m.win; w++ {
			if resident(m.get(tw, w)) {
				m.set(tw, w, winAbsent)
			}
		}
	}
}
