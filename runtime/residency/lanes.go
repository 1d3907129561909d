package residency

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Job is one load to run on a lane. ID is the caller's (the books' read id) and
// must be unique among the jobs queued or running.
type Job struct {
	ID     uint64
	Expert Expert
	Demand bool // a demand load: starts before every queued prefetch
}

// Completion reports one job that ran: its bytes, which lane ran it, when it
// started and how long the load took (wall clock), and its error if it failed.
type Completion struct {
	Job
	Bytes    int64
	Lane     int
	Start    time.Time
	Duration time.Duration
	Err      error
}

// Loader loads one expert using buf as scratch and returns the bytes read
// (Controller.Load has this shape).
type Loader func(e Expert, buf []byte) (int64, error)

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("residency: lanes closed")

// Lanes is a pool of I/O goroutines, each running one load at a time. Demand jobs
// start before queued prefetches; within each class jobs start in submission
// order. Completions are kept until the caller takes them with Poll or Wait.
// Methods are safe for concurrent use.
type Lanes struct {
	mu       sync.Mutex
	cond     *sync.Cond // signalled on new work, a completion, and Close
	demand   []Job
	prefetch []Job
	ids      map[uint64]bool // queued or running
	running  int
	done     []Completion
	closed   bool
	wg       sync.WaitGroup
}

// NewLanes starts n lanes running load, each with a scratch buffer of bufBytes
// (the largest region, Layout.MaxRegion, is enough for one pread per region).
func NewLanes(n int, bufBytes int64, load Loader) (*Lanes, error) {
	if n < 1 {
		return nil, fmt.Errorf("residency: lanes must be at least 1 (got %d)", n)
	}
	if bufBytes < 1 || load == nil {
		return nil, fmt.Errorf("residency: lanes need a loader and a buffer size > 0 (got %d)", bufBytes)
	}
	p := &Lanes{ids: map[uint64]bool{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(n)
	for i := range n {
		go p.lane(i, make([]byte, bufBytes), load)
	}
	return p, nil
}

// lane runs jobs until Close leaves nothing queued.
func (p *Lanes) lane(id int, buf []byte, load Loader) {
	defer p.wg.Done()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for len(p.demand) == 0 && len(p.prefetch) == 0 && !p.closed {
			p.cond.Wait()
		}
		var j Job
		switch {
		case len(p.demand) > 0:
			j, p.demand = p.demand[0], p.demand[1:]
		case len(p.prefetch) > 0:
			j, p.prefetch = p.prefetch[0], p.prefetch[1:]
		default: // closed and nothing queued
			return
		}
		p.running++
		p.mu.Unlock()
		start := time.Now()
		n, err := load(j.Expert, buf)
		c := Completion{Job: j, Bytes: n, Lane: id, Start: start, Duration: time.Since(start), Err: err}
		p.mu.Lock()
		p.running--
		delete(p.ids, j.ID)
		p.done = append(p.done, c)
		p.cond.Broadcast()
	}
}

// Submit queues a job. It fails after Close or when the ID is already queued or
// running.
func (p *Lanes) Submit(j Job) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.ids[j.ID] {
		return fmt.Errorf("residency: job %d is already queued or running", j.ID)
	}
	p.ids[j.ID] = true
	if j.Demand {
		p.demand = append(p.demand, j)
	} else {
		p.prefetch = append(p.prefetch, j)
	}
	p.cond.Broadcast()
	return nil
}

// Cancel removes a queued job that has not started and reports whether it did; a
// job that started, finished or was never submitted is not cancelled (it
// completes as usual).
func (p *Lanes) Cancel(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range []*[]Job{&p.demand, &p.prefetch} {
		if i := slices.IndexFunc(*q, func(j Job) bool { return j.ID == id }); i >= 0 {
			*q = slices.Delete(*q, i, i+1)
			delete(p.ids, id)
			return true
		}
	}
	return false
}

// Promote turns a queued prefetch into a demand load (the expert turned out to be
// needed now) and reports whether it found it queued.
func (p *Lanes) Promote(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.prefetch, func(j Job) bool { return j.ID == id })
	if i < 0 {
		return false
	}
	j := p.prefetch[i]
	p.prefetch = slices.Delete(p.prefetch, i, i+1)
	j.Demand = true
	p.demand = append(p.demand, j)
	return true
}

// Pending is the number of jobs queued or running.
func (p *Lanes) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids)
}

// Poll takes every completion available now, in completion order, without
// waiting.
func (p *Lanes) Poll() []Completion {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.done
	p.done = nil
	return out
}

// Wait takes the next completion, waiting for one if none is available. It
// returns false when nothing is queued, running or left to take.
func (p *Lanes) Wait() (Completion, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.done) == 0 {
		if len(p.ids) == 0 {
			return Completion{}, false
		}
		p.cond.Wait()
	}
	c := p.done[0]
	p.done = p.done[1:]
	return c, true
}

// Close drops the queued jobs, waits for the running ones and stops the lanes; it
// returns the dropped jobs. Completions of the jobs that ran stay available to
// Poll and Wait. Close is idempotent.
func (p *Lanes) Close() []Job {
	p.mu.Lock()
	dropped := append(p.demand, p.prefetch...)
	for _, j := range dropped {
		delete(p.ids, j.ID)
	}
	p.demand, p.prefetch = nil, nil
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	return dropped
}
