package policies

import "github.com/lessim/lessim/sim"

// recency is an intrusive doubly-linked list over every key of a model, kept in
// flat slices (no map, no allocation per operation). The head side is the most
// recently used end; the tail side the least recently used. Index n is the
// sentinel, so an empty list has prev[n] == next[n] == n.
type recency struct {
	prev, next []int32
	in         []bool
	n          int32
	size       int
}

// newRecency makes an empty list for keys 0..n-1.
func newRecency(n int) recency {
	r := recency{prev: make([]int32, n+1), next: make([]int32, n+1), in: make([]bool, n), n: int32(n)}
	r.prev[n], r.next[n] = int32(n), int32(n)
	return r
}

// valid reports whether k names a key of the list.
func (r *recency) valid(k sim.Key) bool { return k >= 0 && int32(k) < r.n }

// touch moves k to the most recently used end, inserting it if absent.
func (r *recency) touch(k sim.Key) {
	if !r.valid(k) {
		return
	}
	i := int32(k)
	if r.in[i] {
		if r.next[r.n] == i {
			return // already most recent
		}
		r.unlink(i)
	} else {
		r.in[i] = true
		r.size++
	}
	first := r.next[r.n]
	r.prev[i], r.next[i] = r.n, first
	r.prev[first] = i
	r.next[r.n] = i
}

// remove takes k out of the list; absent keys are ignored.
// observe applies an engine event: uses and admissions make k the most
// recent; evictions drop it.
func (r *recency) observe(ev sim.Event) {
	switch ev.Kind {
	case sim.Used, sim.Admitted:
		r.touch(ev.Key)
	case sim.Evicted:
		r.remove(ev.Key)
	}
}

func (r *recency) remove(k sim.Key) {
	if !r.valid(k) || !r.in[k] {
		return
	}
	r.unlink(int32(k))
	r.in[k] = false
	r.size--
}

func (r *recency) unlink(i int32) {
	p, n := r.prev[i], r.next[i]
	r.next[p], r.prev[n] = n, p
}

// oldest returns the least recently used key, or -1 when the list is empty.
func (r *recency) oldest() sim.Key { return r.key(r.prev[r.n]) }

// newer returns the key used just after k, or -1 when k is the most recent.
func (r *recency) newer(k sim.Key) sim.Key { return r.key(r.prev[k]) }

func (r *recency) key(i int32) sim.Key {
	if i == r.n {
		return -1
	}
	return sim.Key(i)
}
