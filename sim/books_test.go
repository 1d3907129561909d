package sim

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
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
	if err := b.Check(); err == nil || !strings.Contains(err.Error(), "used") {
		t.Fatalf("Check on corrupted books: %v", err)
	}
}
