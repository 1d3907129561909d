package sim

import (
	"testing"
	"unsafe"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
)

// fifoPolicy evicts the lowest resident, not in-use key; it never prefetches.
type fifoPolicy struct{ b *Books }

func (p fifoPolicy) Name() string                                      { return "fifo" }
func (p fifoPolicy) Prefetch(_ *Lookahead, _ CacheView, d []Key) []Key { return d }
func (p fifoPolicy) Observe(Event)                                     {}
func (p fifoPolicy) Victim(v CacheView, _ int64, _ bool) (Key, bool) {
	for k := range p.b.keys {
		if v.State(Key(k)) == Resident && !v.InUse(Key(k)) {
			return Key(k), true
		}
	}
	return 0, false
}

// instantLoader finishes every read at once and records drops.
type instantLoader struct {
	b       *Books
	dropped []Key
}

func (l *instantLoader) Start(k Key, _ bool) { l.b.Loaded(k) }
func (l *instantLoader) Drop(k Key)          { l.dropped = append(l.dropped, k) }
func (l *instantLoader) Cancel() (Key, bool) { return 0, false }
func (l *instantLoader) Wait(bool) bool      { return false }

// TestBooksEvictAndCheck drives the books by hand: misses are admitted,
// victims dropped through the Loader, and Check catches corrupted accounting.
func TestBooksEvictAndCheck(t *testing.T) {
	m := &devices.ModelSpec{Experts: 4, Layers: []devices.LayerSpec{{ExpertBytes: 10}, {ExpertBytes: 10}}}
	io := &instantLoader{}
	b := NewBooks(m, 20, nil, io)
	b.pol = fifoPolicy{b}
	io.b = b
	b.Measure = true
	for _, sel := range [][]int32{{0, 1}, {2, 3}} {
		b.BeginPass(0, 1)
		for l := range 2 {
			if err := b.Prefetch(&Lookahead{Layer: l}); err != nil {
				t.Fatal(err)
			}
			b.BeginLayer(l)
			b.Select(sel[l : l+1])
			if err := b.Classify(); err != nil {
				t.Fatal(err)
			}
			if err := b.CheckComputed(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	c := b.Counts()
	if c.Uses != 4 || c.Misses != 4 || c.PeakResidentBytes != 20 {
		t.Fatalf("counts %+v, want 4 uses, 4 misses, peak 20", c)
	}
	if len(io.dropped) != 2 {
		t.Fatalf("dropped %v, want two evictions", io.dropped)
	}
	b.used += 10
	errgolden.Check(t, "corrupted", b.Check())
}

// TestKeyStateSize pins keyState at 16 bytes (four keys per cache line): the
// books' hot paths touch keys at random, so its size is their cost.
func TestKeyStateSize(t *testing.T) {
	if n := unsafe.Sizeof(keyState{}); n != 16 {
		t.Fatalf("keyState is %d bytes, want 16", n)
	}
}

// TestStampWraps: when the 32-bit in-use stamp wraps, no key stays InUse
// from a mark of 2^32 generations ago, and the union still builds.
func TestStampWraps(t *testing.T) {
	m := &devices.ModelSpec{Experts: 4, Layers: []devices.LayerSpec{{ExpertBytes: 10}}}
	b := NewBooks(m, 40, nil, &instantLoader{})
	b.stamp = 1<<32 - 3
	b.BeginLayer(0)
	b.Select([]int32{1, 2})
	if !b.InUse(1) || !b.InUse(2) || b.InUse(3) {
		t.Fatal("keys 1 and 2 should be in use before the wrap")
	}
	// The next generation is stamp 2^32-1; the one after wraps to 1, the
	// stamp a mark of long ago could hold.
	b.keys[3].seen = 1
	b.BeginLayer(0)
	b.BeginLayer(0)
	if b.stamp != 1 {
		t.Fatalf("stamp %d after the wrap, want 1", b.stamp)
	}
	for k := range Key(4) {
		if b.InUse(k) {
			t.Errorf("key %d in use after the wrap", k)
		}
	}
	b.Select([]int32{3, 3, 0})
	if u, c := b.Union(); len(u) != 2 || u[0] != 3 || c[0] != 2 || u[1] != 0 {
		t.Fatalf("union after the wrap %v %v, want [3 0] [2 1]", u, c)
	}
}

// TestConfigRefusesTooManyKeys: a model past the books' 16-bit key fields
// is refused with the limit, not run with wrapped positions.
func TestConfigRefusesTooManyKeys(t *testing.T) {
	m := &devices.ModelSpec{Name: "wide", Experts: maxKeyDim + 1, TopK: 1, Layers: []devices.LayerSpec{{ExpertBytes: 10}}}
	c := Config{Model: m}
	errgolden.Check(t, "wide", c.Validate())
}

// namingPolicy is fifoPolicy that, at layer 0, prefetches key want.
type namingPolicy struct {
	fifoPolicy
	want Key
}

func (p namingPolicy) Prefetch(la *Lookahead, _ CacheView, d []Key) []Key {
	if la.Layer == 0 {
		d = append(d, p.want)
	}
	return d
}

// queueLoader finishes demand reads at once and queues prefetches, which
// it cancels newest first and never finishes.
type queueLoader struct {
	b      *Books
	queued []Key
}

func (l *queueLoader) Start(k Key, demand bool) {
	if demand {
		l.b.Loaded(k)
		return
	}
	l.queued = append(l.queued, k)
}
func (l *queueLoader) Drop(Key) {}
func (l *queueLoader) Cancel() (Key, bool) {
	n := len(l.queued)
	if n == 0 {
		return 0, false
	}
	k := l.queued[n-1]
	l.queued = l.queued[:n-1]
	return k, true
}
func (l *queueLoader) Wait(bool) bool { return false }

// TestCancelledPrefetchNotUseful: a prefetch cancelled before its read
// started (to make room for a demand miss) read nothing, so when its key is
// later demand-missed the prefetch counts neither as useful nor as wasted.
func TestCancelledPrefetchNotUseful(t *testing.T) {
	m := &devices.ModelSpec{Experts: 4, Layers: []devices.LayerSpec{{ExpertBytes: 10}, {ExpertBytes: 10}}}
	io := &queueLoader{}
	b := NewBooks(m, 10, nil, io)
	b.pol = namingPolicy{fifoPolicy{b}, 4} // layer 1, expert 0
	io.b = b
	b.Measure = true
	b.BeginPass(0, 1)
	for l, sel := range [][]int32{{1}, {0}} {
		if err := b.Prefetch(&Lookahead{Layer: l}); err != nil {
			t.Fatal(err)
		}
		b.BeginLayer(l)
		b.Select(sel)
		if err := b.Classify(); err != nil {
			t.Fatal(err)
		}
	}
	b.Settle()
	c := b.Counts()
	if c.PrefetchLoads != 1 || c.Misses != 2 {
		t.Fatalf("counts %+v: want the prefetch admitted, then cancelled for layer 0's miss, and layer 1 missing", c)
	}
	if c.PrefetchUseful != 0 || c.WastedPrefetchBytes != 0 {
		t.Errorf("a cancelled prefetch counted: %d useful, %d bytes wasted; want 0 and 0", c.PrefetchUseful, c.WastedPrefetchBytes)
	}
}
