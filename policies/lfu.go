package policies

import "github.com/lessim/lessim/sim"

var (
	_ sim.Policy       = (*LFU)(nil)
	_ sim.UsesObserver = (*LFU)(nil)
	_ sim.LoadObserver = (*LFU)(nil)
)

// LFU evicts the least frequently used expert and never prefetches. Frequency
// is the number of Used events a key has had over the whole run (kept across
// evictions: "perfect" LFU, so a popular expert re-enters with its history);
// ties go to the least recently used (Used and Admitted refresh recency).
//
// Cached keys sit in an indexed binary min-heap ordered by (uses, last touch):
// each event is O(log n); a victim is found by a best-first walk of the heap
// that skips loading and in-use keys, O(s log s) for s skipped keys.
type LFU struct {
	uses  []int64  // Used events per key, whole run
	touch []uint64 // clock of the last Used or Admitted event
	pos   []int32  // index in heap, -1 when not cached
	heap  []int32  // cached keys
	clock uint64
	walk  []int32 // scratch: heap indices of the victim search frontier
}

// NewLFU builds an LFU policy for p.Model.
func NewLFU(p Params) (*LFU, error) {
	p, err := p.resolve("lfu")
	if err != nil {
		return nil, err
	}
	n := numKeys(p.Model)
	f := &LFU{uses: make([]int64, n), touch: make([]uint64, n), pos: make([]int32, n)}
	for i := range f.pos {
		f.pos[i] = -1
	}
	return f, nil
}

// Name is the registry name.
func (f *LFU) Name() string { return "lfu" }

// Prefetch asks for nothing: LFU loads on demand only.
func (f *LFU) Prefetch(_ *sim.Lookahead, _ sim.CacheView, dst []sim.Key) []sim.Key { return dst }

// Observe counts uses, refreshes recency and tracks which keys are cached.
func (f *LFU) Observe(ev sim.Event) {
	switch ev.Kind {
	case sim.Used:
		if f.valid(ev.Key) {
			f.uses[ev.Key]++
			f.refresh(ev.Key)
		}
	case sim.Admitted:
		f.Admitted(ev.Key, ev.Prefetch)
	case sim.Evicted:
		f.Evicted(ev.Key)
	}
}

// Admitted is Observe for an admission: k's place is refreshed.
func (f *LFU) Admitted(k sim.Key, _ bool) {
	if f.valid(k) {
		f.refresh(k)
	}
}

// Evicted is Observe for an eviction: k is no longer cached.
func (f *LFU) Evicted(k sim.Key) {
	if f.valid(k) {
		f.remove(k)
	}
}

// valid reports whether k is one of the model's keys.
func (f *LFU) valid(k sim.Key) bool { return k >= 0 && int(k) < len(f.pos) }

// ObserveUses is Observe for a layer's Used events, in order.
func (f *LFU) ObserveUses(keys []sim.Key, _ int, _ int64) {
	for _, k := range keys {
		if f.valid(k) {
			f.uses[k]++
			f.refresh(k)
		}
	}
}

// refresh stamps k as just touched and (re)places it in the heap. Its order
// key only grows, so it can only sink.
func (f *LFU) refresh(k sim.Key) {
	f.clock++
	f.touch[k] = f.clock
	if f.pos[k] < 0 {
		f.pos[k] = int32(len(f.heap))
		f.heap = append(f.heap, int32(k))
		f.up(int(f.pos[k]))
		return
	}
	f.down(int(f.pos[k]))
}

// Victim names the cached key with the fewest uses (oldest first among equals)
// that is Resident and not InUse, or declines when there is none.
func (f *LFU) Victim(view sim.CacheView, _ int64, _ bool) (sim.Key, bool) {
	if len(f.heap) == 0 {
		return 0, false
	}
	// Best-first walk: the frontier is a min-heap of heap indices; a node's
	// children can only be better candidates once the node itself is rejected.
	f.walk = append(f.walk[:0], 0)
	for len(f.walk) > 0 {
		i := f.popWalk()
		k := sim.Key(f.heap[i])
		if view.Evictable(k) {
			return k, true
		}
		for _, c := range [2]int32{2*i + 1, 2*i + 2} {
			if int(c) < len(f.heap) {
				f.pushWalk(c)
			}
		}
	}
	return 0, false
}

func (f *LFU) less(a, b int32) bool {
	if f.uses[a] != f.uses[b] {
		return f.uses[a] < f.uses[b]
	}
	return f.touch[a] < f.touch[b]
}

func (f *LFU) swap(i, j int) {
	f.heap[i], f.heap[j] = f.heap[j], f.heap[i]
	f.pos[f.heap[i]], f.pos[f.heap[j]] = int32(i), int32(j)
}

func (f *LFU) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !f.less(f.heap[i], f.heap[p]) {
			return
		}
		f.swap(i, p)
		i = p
	}
}

func (f *LFU) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(f.heap) {
			return
		}
		m := l
		if r := l + 1; r < len(f.heap) && f.less(f.heap[r], f.heap[l]) {
			m = r
		}
		if !f.less(f.heap[m], f.heap[i]) {
			return
		}
		f.swap(i, m)
		i = m
	}
}

func (f *LFU) remove(k sim.Key) {
	i := int(f.pos[k])
	if i < 0 {
		return
	}
	last := len(f.heap) - 1
	f.swap(i, last)
	f.heap = f.heap[:last]
	f.pos[k] = -1
	if i < last {
		f.down(i)
		f.up(i)
	}
}

// pushWalk and popWalk keep f.walk a min-heap of heap indices by their keys' order.
func (f *LFU) pushWalk(i int32) {
	f.walk = append(f.walk, i)
	j := len(f.walk) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !f.less(f.heap[f.walk[j]], f.heap[f.walk[p]]) {
			break
		}
		f.walk[j], f.walk[p] = f.walk[p], f.walk[j]
		j = p
	}
}

func (f *LFU) popWalk() int32 {
	top := f.walk[0]
	last := len(f.walk) - 1
	f.walk[0] = f.walk[last]
	f.walk = f.walk[:last]
	j := 0
	for {
		l := 2*j + 1
		if l >= len(f.walk) {
			break
		}
		m := l
		if r := l + 1; r < len(f.walk) && f.less(f.heap[f.walk[r]], f.heap[f.walk[l]]) {
			m = r
		}
		if !f.less(f.heap[f.walk[m]], f.heap[f.walk[j]]) {
			break
		}
		f.walk[j], f.walk[m] = f.walk[m], f.walk[j]
		j = m
	}
	return top
}
