//go:build llamacpp && linux

package live

import (
	"fmt"
	"time"

	"github.com/lessim/lessim/runtime/residency"
	"github.com/lessim/lessim/sim"
)

// loader is the Books' Loader in live mode: reads go to residency lanes (or,
// in stock mode, to the page faults of the expert matmuls), evictions to the
// residency controller. Errors are kept in err (the Loader interface has no
// error returns) and stop the run at the end of the hook.
type loader struct {
	b     *sim.Books
	ctrl  *residency.Controller
	ev    *residency.Evictor
	lanes *residency.Lanes // nil in stock mode
	nE    int
	stock bool

	nextID  uint64
	jobOf   []uint64    // key → its latest job id (0: none)
	submit  []time.Time // key → when its latest job was submitted
	demand  []bool      // key → its latest job is a demand load
	queued  []sim.Key   // prefetch submissions, oldest first (may hold stale keys)
	err     error
	stallNS int64 // waiting for loads, since the run began
	bytes   int64 // completed loads
	reads   int64
	qwaitNS int64 // demand loads waiting for a lane
}

func newLoader(ctrl *residency.Controller, ev *residency.Evictor, lanes *residency.Lanes, nKeys, nE int, stock bool) *loader {
	return &loader{ctrl: ctrl, ev: ev, lanes: lanes, nE: nE, stock: stock,
		jobOf: make([]uint64, nKeys), submit: make([]time.Time, nKeys), demand: make([]bool, nKeys)}
}

var _ sim.Loader = (*loader)(nil)

func (d *loader) expert(k sim.Key) residency.Expert {
	l, x := k.Split(d.nE)
	return residency.Expert{Layer: l, Index: x}
}

func (d *loader) fail(err error) {
	if d.err == nil && err != nil {
		d.err = err
	}
}

// Start submits k's load to the lanes; in stock mode the expert matmul's page
// faults will load it, so the books count it resident at once.
func (d *loader) Start(k sim.Key, demand bool) {
	if d.stock {
		d.b.Loaded(k)
		return
	}
	d.nextID++
	d.jobOf[k], d.submit[k], d.demand[k] = d.nextID, time.Now(), demand
	if !demand {
		if len(d.queued) > 4096 {
			d.compact()
		}
		d.queued = append(d.queued, k)
	}
	d.fail(d.lanes.Submit(residency.Job{ID: d.nextID, Expert: d.expert(k), Demand: demand}))
}

// compact drops queued-prefetch entries whose key is no longer loading.
func (d *loader) compact() {
	q := d.queued[:0]
	for _, k := range d.queued {
		if d.b.State(k) == sim.Loading {
			q = append(q, k)
		}
	}
	d.queued = q
}

// Drop hands k to the evictor, which drops its pages from the mapping and
// the page cache off the compute thread.
func (d *loader) Drop(k sim.Key) { d.fail(d.ev.Evict(d.expert(k))) }

// Cancel withdraws the newest queued prefetch not in use whose load has not started.
func (d *loader) Cancel() (sim.Key, bool) {
	if d.stock {
		return 0, false
	}
	for i := len(d.queued) - 1; i >= 0; i-- {
		k := d.queued[i]
		if d.b.State(k) != sim.Loading || d.b.InUse(k) || d.demand[k] {
			continue
		}
		if d.lanes.Cancel(d.jobOf[k]) {
			d.queued = append(d.queued[:i], d.queued[i+1:]...)
			d.jobOf[k] = 0
			return k, true
		}
	}
	return 0, false
}

// Wait takes the completions available now; with block it first waits for
// one, counting the wait as stall.
func (d *loader) Wait(block bool) bool {
	if d.stock {
		return !block
	}
	if block {
		t := time.Now()
		c, ok := d.lanes.Wait()
		d.stallNS += time.Since(t).Nanoseconds()
		if !ok {
			return false
		}
		d.complete(c)
	}
	for _, c := range d.lanes.Poll() {
		d.complete(c)
	}
	return true
}

// complete books one finished load.
func (d *loader) complete(c residency.Completion) {
	if c.Err != nil {
		d.fail(fmt.Errorf("load %v: %w", c.Expert, c.Err))
		return
	}
	d.bytes += c.Bytes
	d.reads++
	k := sim.MakeKey(c.Expert.Layer, c.Expert.Index, d.nE)
	if d.jobOf[k] != c.ID {
		return // a load superseded by a later one (cannot happen: a key loads once per admission)
	}
	if d.demand[k] {
		d.qwaitNS += c.Start.Sub(d.submit[k]).Nanoseconds()
	}
	d.jobOf[k] = 0
	d.b.Loaded(k)
}

// waitResident blocks until every key of the current union is resident.
func (d *loader) waitResident() error {
	union, _ := d.b.Union()
	for _, k := range union {
		for d.b.State(k) != sim.Resident {
			if d.err != nil {
				return d.err
			}
			if !d.Wait(true) {
				l, x := k.Split(d.nE)
				return fmt.Errorf("internal: layer %d expert %d is loading but no load is queued or running", l, x)
			}
		}
	}
	return d.err
}
