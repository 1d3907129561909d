//go:build linux

package residency

import (
	"fmt"
	"sync"
)

// Evictor evicts experts on its own goroutine, in the order they are handed
// over, so the caller (the engine's compute thread) does not wait for the
// kernel. Methods are safe for concurrent use.
type Evictor struct {
	c       *Controller
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []Expert
	pending map[Expert]int // evictions queued or running, per expert
	busy    bool
	closed  bool
	err     error
	done    chan struct{}
	n       int64
}

// NewEvictor starts an evictor for c's experts.
func NewEvictor(c *Controller) *Evictor {
	e := &Evictor{c: c, pending: map[Expert]int{}, done: make(chan struct{})}
	e.cond = sync.NewCond(&e.mu)
	go e.loop()
	return e
}

// Evict hands x over for eviction and returns at once. After Close it
// evicts on the caller's thread.
func (e *Evictor) Evict(x Expert) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return e.c.Evict(x)
	}
	e.queue = append(e.queue, x)
	e.pending[x]++
	e.mu.Unlock()
	e.cond.Broadcast()
	return nil
}

func (e *Evictor) loop() {
	defer close(e.done)
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		for len(e.queue) == 0 && !e.closed {
			e.cond.Wait()
		}
		if len(e.queue) == 0 {
			return
		}
		x := e.queue[0]
		e.queue = e.queue[1:]
		e.busy = true
		e.mu.Unlock()
		err := e.c.Evict(x)
		e.mu.Lock()
		e.busy = false
		e.n++
		if e.pending[x]--; e.pending[x] == 0 {
			delete(e.pending, x)
		}
		if err != nil && e.err == nil {
			e.err = fmt.Errorf("evictor: %w", err)
		}
		e.cond.Broadcast()
	}
}

// Wait blocks until no eviction of x handed over before it is queued or
// running (a load of x calls it first, so the eviction cannot drop the pages
// the load brings in).
func (e *Evictor) Wait(x Expert) {
	e.mu.Lock()
	for e.pending[x] > 0 {
		e.cond.Wait()
	}
	e.mu.Unlock()
}

// Drain blocks until every eviction handed over has run, and returns the
// first error one of them had.
func (e *Evictor) Drain() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.queue) > 0 || e.busy {
		e.cond.Wait()
	}
	return e.err
}

// Evicted is the number of evictions run so far.
func (e *Evictor) Evicted() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// Close runs what is queued, stops the goroutine and returns the first
// error; later Evict calls evict synchronously.
func (e *Evictor) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cond.Broadcast()
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
