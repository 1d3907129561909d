//go:build linux

package residency

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// gate is a Loader wrapper that holds every load until released and records
// how many loads run at once.
type gate struct {
	mu       sync.Mutex
	inside   int
	peak     int
	started  chan Expert
	release  chan struct{}
	load     Loader
	finished []Expert
}

func newGate(load Loader) *gate {
	return &gate{started: make(chan Expert, 64), release: make(chan struct{}), load: load}
}

func (g *gate) Load(e Expert, buf []byte) (int64, error) {
	g.mu.Lock()
	g.inside++
	g.peak = max(g.peak, g.inside)
	g.mu.Unlock()
	g.started <- e
	<-g.release
	n, err := g.load(e, buf)
	g.mu.Lock()
	g.inside--
	g.finished = append(g.finished, e)
	g.mu.Unlock()
	return n, err
}

func openController(t *testing.T) *Controller {
	t.Helper()
	path, _ := synthModel(t, diskDir(t), smallOptions("qwen3moe"))
	mapFile(t, path)
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.EvictAll(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLanesRunConcurrently holds loads until four have started at once: with
// fewer concurrent lanes the test would hang, so it proves four run together.
func TestLanesRunConcurrently(t *testing.T) {
	c := openController(t)
	g := newGate(c.Load)
	p, err := NewLanes(4, c.Layout().MaxRegion(), g.Load)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 8 {
		if err := p.Submit(Job{ID: uint64(i), Expert: Expert{i % 4, i}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		<-g.started
	}
	if p.Pending() != 8 {
		t.Errorf("pending %d, want 8 (4 running, 4 queued)", p.Pending())
	}
	close(g.release)
	var ids []uint64
	for {
		cpl, ok := p.Wait()
		if !ok {
			break
		}
		if cpl.Err != nil {
			t.Fatal(cpl.Err)
		}
		if cpl.Bytes != c.Layout().Bytes(cpl.Expert.Layer) || cpl.Duration <= 0 || cpl.Lane < 0 || cpl.Lane > 3 {
			t.Errorf("completion %+v: want the expert's bytes, a duration and a lane in 0..3", cpl)
		}
		if f, _ := c.Resident(cpl.Expert); f != 1 {
			t.Errorf("%v completed but resident %.2f", cpl.Expert, f)
		}
		ids = append(ids, cpl.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []uint64{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("completed %v, want jobs 0..7 once each", ids)
	}
	if g.peak != 4 {
		t.Errorf("peak concurrent loads %d, want 4", g.peak)
	}
}

// TestLanesCancelAndPriority uses one lane held busy by job 1: queued jobs can
// be cancelled, a started one cannot, and demand loads overtake prefetches.
func TestLanesCancelAndPriority(t *testing.T) {
	c := openController(t)
	g := newGate(c.Load)
	p, err := NewLanes(1, c.Layout().MaxRegion(), g.Load)
	if err != nil {
		t.Fatal(err)
	}
	submit := func(id uint64, demand bool) {
		t.Helper()
		if err := p.Submit(Job{ID: id, Expert: Expert{0, int(id)}, Demand: demand}); err != nil {
			t.Fatal(err)
		}
	}
	submit(1, false)
	<-g.started // job 1 is running
	submit(2, false)
	submit(3, false)
	submit(4, false)
	submit(5, true)
	submit(6, false)
	if err := p.Submit(Job{ID: 3}); err == nil {
		t.Error("a duplicate queued ID was accepted")
	}
	if !p.Cancel(2) {
		t.Error("Cancel(2) of a queued job = false")
	}
	if p.Cancel(1) {
		t.Error("Cancel(1) of a running job = true")
	}
	if p.Cancel(99) {
		t.Error("Cancel of an unknown job = true")
	}
	if !p.Promote(4) {
		t.Error("Promote(4) of a queued prefetch = false")
	}
	go func() {
		for range 4 {
			g.release <- struct{}{}
			<-g.started
		}
		g.release <- struct{}{}
	}()
	var order []uint64
	for range 5 {
		cpl, ok := p.Wait()
		if !ok {
			t.Fatal("Wait ended early")
		}
		order = append(order, cpl.ID)
	}
	if want := []uint64{1, 5, 4, 3, 6}; !slices.Equal(order, want) {
		t.Errorf("completion order %v, want %v (demand 5 and promoted 4 before prefetches 3, 6; 2 cancelled)", order, want)
	}
	if f, _ := c.Resident(Expert{0, 2}); f > boundary(c, Expert{0, 2}) {
		t.Errorf("cancelled job's expert resident %.2f", f)
	}
	if _, ok := p.Wait(); ok {
		t.Error("Wait after everything completed = true")
	}
	p.Close()
	if err := p.Submit(Job{ID: 7}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: err = %v", err)
	}
}

// TestLanesCloseDropsQueued: Close returns the queued jobs, waits for the
// running one, and its completion stays available.
func TestLanesCloseDropsQueued(t *testing.T) {
	c := openController(t)
	g := newGate(c.Load)
	p, err := NewLanes(1, c.Layout().MaxRegion(), g.Load)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.Submit(Job{ID: uint64(i), Expert: Expert{1, i}}); err != nil {
			t.Fatal(err)
		}
	}
	<-g.started
	go func() { g.release <- struct{}{} }()
	dropped := p.Close()
	if len(dropped) != 2 || dropped[0].ID != 1 || dropped[1].ID != 2 {
		t.Errorf("Close dropped %+v, want jobs 1 and 2", dropped)
	}
	done := p.Poll()
	if len(done) != 1 || done[0].ID != 0 || done[0].Err != nil {
		t.Errorf("after Close completions %+v, want job 0", done)
	}
	if p.Pending() != 0 {
		t.Errorf("pending %d after Close", p.Pending())
	}
	if len(g.finished) != 1 {
		t.Errorf("%d loads ran, want 1", len(g.finished))
	}
	p.Close() // idempotent
}

func TestLanesErrors(t *testing.T) {
	if _, err := NewLanes(0, 1, func(Expert, []byte) (int64, error) { return 0, nil }); err == nil {
		t.Error("0 lanes: no error")
	}
	if _, err := NewLanes(1, 0, nil); err == nil {
		t.Error("no loader: no error")
	}
	p, err := NewLanes(2, 1, func(e Expert, _ []byte) (int64, error) { return 0, errors.New("boom") })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Submit(Job{ID: 1}); err != nil {
		t.Fatal(err)
	}
	cpl, ok := p.Wait()
	if !ok || cpl.Err == nil || cpl.Err.Error() != "boom" {
		t.Errorf("failed load: completion %+v, %v", cpl, ok)
	}
}
