package sim

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lessim/lessim/devices"
)

// Loader is the I/O side of the Books: the simulator's virtual flash or the
// live driver's reads into the page cache. The Books decide what is loaded and
// evicted; the Loader moves the bytes and reports finished loads with
// Books.Loaded. Its methods are called only from inside Books methods, on the
// caller's goroutine, and must not call back into the Books except Loaded.
type Loader interface {
	// Start issues k's read(s). The Books have reserved k's bytes and marked it
	// Loading; demand is true for a miss the compute thread waits on, false for
	// a prefetch. The Loader reports completion with Books.Loaded(k), once.
	Start(k Key, demand bool)
	// Drop releases an evicted key's memory (live: MADV_DONTNEED +
	// FADV_DONTNEED; the simulator has nothing to do). k was Resident.
	Drop(k Key)
	// Cancel withdraws the most recently queued prefetch whose reads have not
	// started and whose key is not InUse, and returns its key; ok=false when
	// there is none. The Books then free its bytes (k becomes Absent).
	Cancel() (k Key, ok bool)
	// Wait reports every load finished by now. With block it first waits
	// until at least one more load finishes (the compute thread stalls); it
	// returns false when block is set and nothing is loading.
	Wait(block bool) bool
}

// Counts are the books' tallies: expert uses by residency, prefetch
// accounting and the peak of resident + loading bytes. Counters other than
// PeakResidentBytes and the wasted bytes left at Settle move only while
// Books.Measure is set. Result takes them field by field (docs/metrics.md).
type Counts struct {
	Uses, Hits, InflightHits, Misses int64

	PrefetchRequested, PrefetchCovered int64
	PrefetchLoads, PrefetchUseful      int64
	PrefetchBytes, WastedPrefetchBytes int64

	PeakResidentBytes int64
	// OverBudgetLoads counts demand loads admitted beyond the capacity because
	// every resident expert was in use by the batch (a prefill whose distinct
	// experts exceed the cache); OverBudgetBytes is the most the books held
	// beyond the capacity.
	OverBudgetLoads, OverBudgetBytes int64
	// NeighbourLoads and NeighbourBytes count experts that became resident
	// without a read of their own (Arrived: a gguf-mmap read-around or
	// read-ahead brought all their bytes in).
	NeighbourLoads, NeighbourBytes int64
}

// keyState is one expert's bookkeeping, kept together so that classifying,
// admitting and evicting a key touches one cache line. pending and syncLoad
// belong to the simulator's Loader (same package); the Books never read them.
//
// NB: 16 bytes, four keys to a cache line: the union, classification and
// eviction touch keys at random, so the array's size is the hot paths' cost.
// Hence the narrow fields: stamps and pass numbers wrap at 2^32 (stamps are
// renewed when they do, see nextStamp; a pass number would alias only for a
// key named and not used for 2^32 passes, over four billion tokens), and
// union positions and layers fit 16 bits (Config.Validate keeps experts and
// layers at most maxKeyDim).
type keyState struct {
	seen       uint32 // == Books.stamp: in the current layer's union (in use)
	requested  uint32 // pass (mod 2^32) whose use of the key a policy's latest naming predicts
	pos        uint16 // index in the current union
	layer      uint16 // the key's MoE layer (NB: kept to spare a division per use)
	state      Residency
	pending    int8 // simulator: reads outstanding
	syncLoad   bool // simulator: admitted, to be faulted in on the compute thread (gguf-mmap)
	prefUnused bool // loaded by prefetch, not used since
}

// maxKeyDim is the most experts per layer and MoE layers the books hold
// (keyState's 16-bit fields).
const maxKeyDim = 1<<16 - 1

// Books are the expert cache's books, shared by the simulator and the live
// driver: capacity, residency, admission and eviction (through the policy),
// cancelling queued prefetches, the policy's event stream (PassStart, Used,
// Admitted, Evicted), prefetch accounting and in-use marking. The I/O is the
// caller's (Loader), in the shape of raft's Ready/Advance: the Books hand out
// reads with Loader.Start and the caller reports completions with Loaded.
//
// A pass is driven as: BeginPass; then per MoE layer Prefetch (moment 1),
// BeginLayer, Select once per token, Classify (moment 2: hits, misses
// admitted, Used events), after which the caller waits until every key of
// Union is Resident and computes. Books are not safe for concurrent use.
type Books struct {
	pol  Policy
	view CacheView
	io   Loader
	// NB: the concrete forms of pol and io when they have them, called
	// directly on the per-expert paths (no interface dispatch per use).
	uses UsesObserver
	load LoadObserver
	eng  *engine

	nE         int
	layerBytes []int64 // bytes of one expert per layer
	keys       []keyState

	capacity     int64
	used         int64 // resident + loading
	loadingBytes int64
	landed       int64 // loads finished so far (Loading became Resident)

	passNo int64
	first  int64 // trace step of the pass's first token
	stamp  uint32
	layer  int

	// Measure turns the counters on (decode) or off (prefill, warm-up).
	Measure bool
	// OnUse, when set, is called for every key of Classify's union with its
	// residency before admission (Resident = hit, Loading = in flight, Absent = miss).
	OnUse func(k Key, st Residency)

	c Counts

	union []Key
	// cnt and last are kept only once an expert repeats in the layer (rows >
	// len(union), see Select); until then every count is 1 and union[i]'s
	// only use is row i+1.
	cnt    []int32 // tokens of the pass using union[i]
	last   []int32 // row (token-major, rank order) of union[i]'s last use in the pass
	rows   int32
	ones   []int32 // all 1: the counts of a union without repeats
	order  []int32 // scratch: union indices in last-use order
	useBuf []Key   // scratch: union keys in last-use order
	pfBuf  []Key
}

// NewBooks makes empty books for model m with a cache of capacity bytes,
// run by pol, with io doing the reads.
func NewBooks(m *devices.ModelSpec, capacity int64, pol Policy, io Loader) *Books {
	b := &Books{}
	b.init(m, capacity, pol, io)
	return b
}

func (b *Books) init(m *devices.ModelSpec, capacity int64, pol Policy, io Loader) {
	nL := len(m.Layers)
	*b = Books{
		pol: pol, io: io, nE: m.Experts,
		layerBytes: make([]int64, nL),
		keys:       make([]keyState, nL*m.Experts),
		capacity:   capacity,
		layer:      -1,
	}
	b.view = booksView{b}
	b.uses, _ = pol.(UsesObserver)
	b.load, _ = pol.(LoadObserver)
	b.eng, _ = io.(*engine)
	for i, l := range m.Layers {
		b.layerBytes[i] = l.ExpertBytes
	}
	for k := range b.keys {
		b.keys[k].layer = uint16(k / m.Experts)
	}
}

// View is the read-only face of the books that policies are shown.
func (b *Books) View() CacheView { return b.view }

// State is k's residency now.
func (b *Books) State(k Key) Residency { return b.keys[k].state }

// InUse reports whether k is in the union of the layer being computed.
func (b *Books) InUse(k Key) bool { return b.keys[k].seen == b.stamp }

// KeyBytes is the size of expert k.
func (b *Books) KeyBytes(k Key) int64 { return b.layerBytes[b.keys[k].layer] }

// UsedBytes is resident plus loading bytes.
func (b *Books) UsedBytes() int64 { return b.used }

// Counts are the tallies so far.
func (b *Books) Counts() Counts { return b.c }

// Union is the current layer's selected keys in first-use order, and for
// each the number of the pass's tokens using it. Valid until the next BeginLayer.
func (b *Books) Union() ([]Key, []int32) {
	if !b.once() {
		return b.union, b.cnt
	}
	for len(b.ones) < len(b.union) {
		b.ones = append(b.ones, 1)
	}
	return b.union, b.ones[:len(b.union)]
}

// once reports whether each key of the union is used by one token of the
// pass (then Union's counts are all 1).
func (b *Books) once() bool { return int(b.rows) == len(b.union) }

// Pass is the number of passes begun so far (the current pass's number).
func (b *Books) Pass() int64 { return b.passNo }

// BeginPass starts a forward pass over tokens tokens, the first of which is
// trace step first, and tells the policy (a PassStart event).
func (b *Books) BeginPass(first int64, tokens int) {
	b.passNo++
	b.first = first
	b.layer = -1
	b.pol.Observe(Event{Kind: PassStart, Layer: -1, Step: first, Tokens: int32(tokens)})
}

// Prefetch is moment 1 of la.Layer: nothing is in use; the policy is shown
// la and the keys it names are admitted in its order, each read started at
// once, until it declines to make room.
func (b *Books) Prefetch(la *Lookahead) error {
	b.nextStamp()
	l := la.Layer
	b.pfBuf = b.pol.Prefetch(la, b.view, b.pfBuf[:0])
	for _, k := range b.pfBuf {
		if k < 0 || int(k) >= len(b.keys) {
			return fmt.Errorf("policy %s asked to prefetch expert key %d: no such expert", b.pol.Name(), k)
		}
		// A naming predicts the key's next use: later in this pass, or in the
		// next pass when it names a layer at or before this one.
		target := uint32(b.passNo)
		ks := &b.keys[k]
		if int(ks.layer) <= l {
			target++
		}
		// NB: only measured namings are recorded: a prefill pass's naming
		// for the first decode pass would count that pass's uses as covered
		// without a request (precision above 1).
		if b.Measure && ks.requested != target {
			ks.requested = target
			b.c.PrefetchRequested++
		}
		if ks.state != Absent {
			continue
		}
		ok, err := b.admit(k, true)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		// NB: as for namings, only measured loads can be useful or wasted:
		// a prefill prefetch used in decode is not one of PrefetchLoads.
		b.keys[k].prefUnused = b.Measure
		if b.Measure {
			b.c.PrefetchLoads++
			b.c.PrefetchBytes += b.KeyBytes(k)
		}
		b.start(k, false)
	}
	return nil
}

// nextStamp starts a new in-use generation: no key is InUse after it. When
// the 32-bit stamp wraps every key's mark is cleared, so an old mark never
// matches a new stamp.
func (b *Books) nextStamp() {
	b.stamp++
	if b.stamp == 0 {
		for k := range b.keys {
			b.keys[k].seen = 0
		}
		b.stamp = 1
	}
}

// BeginLayer starts moment 2 of MoE layer l: the previous union is dropped.
func (b *Books) BeginLayer(l int) {
	b.nextStamp()
	b.layer = l
	b.union, b.rows = b.union[:0], 0
}

// Select adds one token's top-k experts of the current layer to the union
// (they are InUse from now on). Experts must be in [0, experts).
//
// NB: until an expert repeats within the layer (a second token of the pass,
// or a trace naming one twice), every count is 1 and union index i was used
// at row i+1, so only the union is built; the counts and last rows are
// written out at the first repeat (counted). A one-token pass, the common
// case, never writes them.
func (b *Books) Select(experts []int32) {
	if int(b.rows) != len(b.union) {
		b.selectCounted(experts)
		return
	}
	// NB: keys, the stamp and the union in locals: the stores through ks
	// could alias b's fields, so they would be reloaded for every expert.
	keys, stamp, union := b.keys, b.stamp, b.union
	base := b.layer * b.nE
	for i, x := range experts {
		k := Key(base + int(x))
		ks := &keys[k]
		if ks.seen == stamp {
			b.union, b.rows = union, int32(len(union))
			b.counted()
			b.selectCounted(experts[i:])
			return
		}
		ks.seen = stamp
		ks.pos = uint16(len(union))
		union = append(union, k)
	}
	b.union, b.rows = union, int32(len(union))
}

// counted writes out the counts and last rows of a union built without a
// repeat: each expert used once, union index i at row i+1.
func (b *Books) counted() {
	b.cnt, b.last = b.cnt[:0], b.last[:0]
	for i := range b.union {
		b.cnt = append(b.cnt, 1)
		b.last = append(b.last, int32(i+1))
	}
}

// selectCounted is Select once the layer's counts are kept (cnt and last
// cover the union).
func (b *Books) selectCounted(experts []int32) {
	base := b.layer * b.nE
	for _, x := range experts {
		k := Key(base + int(x))
		b.rows++
		ks := &b.keys[k]
		if ks.seen == b.stamp {
			b.cnt[ks.pos]++
			b.last[ks.pos] = b.rows
			continue
		}
		ks.seen = b.stamp
		ks.pos = uint16(len(b.union))
		b.union = append(b.union, k)
		b.cnt = append(b.cnt, 1)
		b.last = append(b.last, b.rows)
	}
}

// Classify is moment 2 after the selections: each key of the union is counted
// as a hit, in-flight hit or miss, misses are admitted (evicting the policy's
// victims) and their reads started as demand reads, then the policy is told
// of the uses. The caller then waits for the union to be Resident.
func (b *Books) Classify() error {
	// NB: the loop's invariants in locals: admit's calls would make the
	// compiler reload them from b for every key. The tallies are kept
	// without branches (a hit, an in-flight hit and a miss follow one another
	// at random, so branches on them mispredict) and added when measuring.
	onUse, pass := b.OnUse, uint32(b.passNo)
	var byState [4]int64 // uses by Residency
	var covered, useful int64
	for _, k := range b.union {
		ks := &b.keys[k]
		st := ks.state
		if onUse != nil {
			onUse(k, st)
		}
		byState[st&3]++
		covered += b2i(ks.requested == pass)
		useful += b2i(ks.prefUnused)
		ks.prefUnused = false
		if st == Absent {
			ok, err := b.admit(k, false)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("internal: demand admission refused")
			}
			b.start(k, true)
		}
	}
	if b.Measure {
		b.c.Uses += int64(len(b.union))
		b.c.Hits += byState[Resident]
		b.c.InflightHits += byState[Loading]
		b.c.Misses += byState[Absent]
		b.c.PrefetchCovered += covered
		b.c.PrefetchUseful += useful
	}
	b.observeUses()
	return nil
}

// b2i is 1 for true and 0 for false (compiled without a branch).
func b2i(x bool) int64 {
	var n int64
	if x {
		n = 1
	}
	return n
}

// observeUses tells the policy of the layer's uses in order of each expert's
// last use in the pass, so recency reflects the latest token that used it
// (for one token this is rank order). NB: this order, not first appearance,
// is what reproduces BigMoeOnEdge's recorded residency on batched prefill.
func (b *Books) observeUses() {
	keys := b.union
	if int(b.rows) != len(b.union) { // else every expert was used once: union order is use order
		b.order = b.order[:0]
		for idx := range b.union {
			b.order = append(b.order, int32(idx))
		}
		slices.SortFunc(b.order, func(x, y int32) int { return cmp.Compare(b.last[x], b.last[y]) })
		b.useBuf = b.useBuf[:0]
		for _, idx := range b.order {
			b.useBuf = append(b.useBuf, b.union[idx])
		}
		keys = b.useBuf
	}
	if b.uses != nil {
		b.uses.ObserveUses(keys, b.layer, b.first)
		return
	}
	for _, k := range keys {
		b.pol.Observe(Event{Kind: Used, Key: k, Layer: b.layer, Step: b.first})
	}
}

// start, wait, drop and cancel call the Loader: the simulator's engine
// directly, any other through the interface.
func (b *Books) start(k Key, demand bool) {
	if b.eng != nil {
		b.eng.Start(k, demand)
		return
	}
	b.io.Start(k, demand)
}

func (b *Books) wait(block bool) bool {
	if e := b.eng; e != nil {
		if !block {
			e.fl.advance(e.now) // NB: Wait(false), inline: mostly nothing is due
			return true
		}
		return e.waitAnyRead()
	}
	return b.io.Wait(block)
}

func (b *Books) drop(k Key) {
	if b.eng != nil {
		b.eng.Drop(k)
		return
	}
	b.io.Drop(k)
}

func (b *Books) cancel() (Key, bool) {
	if b.eng != nil {
		return b.eng.Cancel()
	}
	return b.io.Cancel()
}

// Loaded records that every read of k has finished: Loading becomes Resident.
// Keys not Loading are ignored (their load was cancelled).
func (b *Books) Loaded(k Key) {
	if b.keys[k].state != Loading {
		return
	}
	b.keys[k].state = Resident
	b.loadingBytes -= b.KeyBytes(k)
	b.landed++
}

// Arrived makes Absent key k Resident at once: its bytes came in with another
// key's reads (the kernel's read-around or read-ahead under gguf-mmap). Room
// is made as for a prefetch, so the policy may decline (then k stays Absent
// and Arrived reports false) and no expert in use is evicted; the policy sees
// an Admitted event with Prefetch set. A key not Absent is left alone.
func (b *Books) Arrived(k Key) (bool, error) {
	if b.keys[k].state != Absent {
		return false, nil
	}
	ok, err := b.admit(k, true)
	if !ok || err != nil {
		return false, err
	}
	b.Loaded(k)
	if b.Measure {
		b.c.NeighbourLoads++
		b.c.NeighbourBytes += b.KeyBytes(k)
	}
	return true, nil
}

// Settle counts prefetched keys still unused at the end of a run as wasted.
// Call it once, after the last pass.
func (b *Books) Settle() {
	for k := range b.keys {
		if b.keys[k].prefUnused {
			b.c.WastedPrefetchBytes += b.layerBytes[b.keys[k].layer]
		}
	}
}

// admit reserves k's bytes and marks it Loading; the caller starts the read.
func (b *Books) admit(k Key, prefetch bool) (bool, error) {
	need := b.KeyBytes(k)
	ok, err := b.makeRoom(need, prefetch)
	if !ok || err != nil {
		return false, err
	}
	b.keys[k].state = Loading
	b.used += need
	b.loadingBytes += need
	b.c.PeakResidentBytes = max(b.c.PeakResidentBytes, b.used)
	if b.load != nil {
		b.load.Admitted(k, prefetch)
	} else {
		b.pol.Observe(Event{Kind: Admitted, Key: k, Layer: int(b.keys[k].layer), Step: b.first, Prefetch: prefetch})
	}
	return true, nil
}

// makeRoom evicts policy-chosen victims until need bytes are free. For a
// prefetch it reports false when the policy declines; for a demand load it
// cancels queued prefetches and then waits for loads before giving up.
func (b *Books) makeRoom(need int64, prefetch bool) (bool, error) {
	for b.capacity-b.used < need {
		// NB: finish loads due by now first: a completed load is evictable.
		// The simulator's flash is advanced here directly (Wait(false)
		// without a call, once per victim).
		if e := b.eng; e != nil {
			e.fl.advance(e.now)
		} else {
			b.io.Wait(false)
		}
		v, ok := b.pol.Victim(b.view, need-(b.capacity-b.used), prefetch)
		if ok {
			if err := b.checkVictim(v); err != nil {
				return false, err
			}
			b.evict(v)
			continue
		}
		if prefetch {
			return false, nil
		}
		if k, ok := b.cancel(); ok {
			b.cancelled(k)
			continue
		}
		if !b.wait(true) {
			return b.overBudget(need)
		}
	}
	return true, nil
}

// overBudget admits a demand load beyond the capacity when nothing can make
// room: every resident expert is in use by the current batch and nothing is
// loading. This happens only when a batch (a prefill pass) needs more distinct
// experts at one layer than the cache holds; like BigMoeOnEdge's engine, the
// books exceed the budget for the batch and evict back under it as later
// admissions need room. A policy that declines while evictable experts exist
// is still an error.
func (b *Books) overBudget(need int64) (bool, error) {
	for k := range b.keys {
		if b.keys[k].state == Resident && b.keys[k].seen != b.stamp {
			return false, fmt.Errorf("policy %s declined to evict but %s more are needed and nothing is loading (cache %s)",
				b.pol.Name(), FormatBytes(need-(b.capacity-b.used)), FormatBytes(b.capacity))
		}
	}
	b.c.OverBudgetLoads++
	b.c.OverBudgetBytes = max(b.c.OverBudgetBytes, b.used+need-b.capacity)
	return true, nil
}

func (b *Books) checkVictim(v Key) error {
	// NB: the valid case inlines; the messages are built apart.
	if uint(v) < uint(len(b.keys)) {
		if ks := &b.keys[v]; ks.state == Resident && ks.seen != b.stamp {
			return nil
		}
	}
	return b.badVictim(v)
}

// badVictim says why v cannot be evicted.
func (b *Books) badVictim(v Key) error {
	if v < 0 || int(v) >= len(b.keys) {
		return fmt.Errorf("policy %s chose victim %d: no such expert", b.pol.Name(), v)
	}
	l, x := v.Split(b.nE)
	if b.keys[v].state != Resident {
		return fmt.Errorf("policy %s chose victim layer %d expert %d: not resident", b.pol.Name(), l, x)
	}
	return fmt.Errorf("policy %s chose victim layer %d expert %d: in use by the current layer", b.pol.Name(), l, x)
}

func (b *Books) evict(k Key) {
	n := b.KeyBytes(k)
	b.keys[k].state = Absent
	b.used -= n
	if b.keys[k].prefUnused {
		b.keys[k].prefUnused = false
		if b.Measure {
			b.c.WastedPrefetchBytes += n
		}
	}
	// NB: the simulator's Drop has nothing to do without the detailed mmap
	// model's windows: the call is skipped then.
	if e := b.eng; e == nil || e.mm != nil {
		b.drop(k)
	}
	if b.load != nil {
		b.load.Evicted(k) // NB: evicted's common case, without its call
		return
	}
	b.evicted(k)
}

// cancelled frees a Loading prefetch whose reads the Loader withdrew. Its
// bytes were never read, so it is neither useful nor wasted: a later demand
// miss of k owes nothing to it.
func (b *Books) cancelled(k Key) {
	n := b.KeyBytes(k)
	b.keys[k].state = Absent
	b.keys[k].prefUnused = false
	b.used -= n
	b.loadingBytes -= n
	b.evicted(k)
}

// evicted tells the policy that k left the cache.
func (b *Books) evicted(k Key) {
	if b.load != nil {
		b.load.Evicted(k)
		return
	}
	b.pol.Observe(Event{Kind: Evicted, Key: k, Layer: int(b.keys[k].layer), Step: b.first})
}

// booksView is the read-only face of the Books shown to policies.
type booksView struct{ b *Books }

func (v booksView) State(k Key) Residency { return v.b.keys[k].state }
func (v booksView) InUse(k Key) bool      { return v.b.keys[k].seen == v.b.stamp }
func (v booksView) Evictable(k Key) bool {
	ks := &v.b.keys[k]
	return ks.state == Resident && ks.seen != v.b.stamp
}
func (v booksView) FreeBytes() int64            { return v.b.capacity - v.b.used }
func (v booksView) LoadingBytes() int64         { return v.b.loadingBytes }
func (v booksView) CapacityBytes() int64        { return v.b.capacity }
func (v booksView) ExpertBytes(layer int) int64 { return v.b.layerBytes[layer] }
