package policies

import "github.com/lessim/lessim/sim"

// recency is an intrusive doubly-linked list over every key of a model, kept in
// one flat slice of nodes (no map, no allocation per operation, one cache line
// per key touched). The head side is the most recently used end; the tail
// side the least recently used. Node n is the sentinel, so an empty list has
// its prev and next pointing at itself; an absent key has prev == -1.
type recency struct {
	node []link
	n    int32
	size int
}

// link is one key's neighbours in the list.
type link struct{ prev, next int32 }

// newRecency makes an empty list for keys 0..n-1.
func newRecency(n int) recency {
	r := recency{node: make([]link, n+1), n: int32(n)}
	for i := range n {
		r.node[i].prev = -1
	}
	r.node[n] = link{int32(n), int32(n)}
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
	head := &r.node[r.n]
	if r.node[i].prev >= 0 {
		if head.next == i {
			return // already most recent
		}
		r.unlink(i)
	} else {
		r.size++
	}
	first := head.next
	r.node[i] = link{r.n, first}
	r.node[first].prev = i
	head.next = i
}

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

// remove takes k out of the list; absent keys are ignored.
func (r *recency) remove(k sim.Key) {
	if !r.valid(k) || r.node[k].prev < 0 {
		return
	}
	r.unlink(int32(k))
	r.node[k].prev = -1
	r.size--
}

func (r *recency) unlink(i int32) {
	l := r.node[i]
	r.node[l.prev].next, r.node[l.next].prev = l.next, l.prev
}

// oldest returns the least recently used key, or -1 when the list is empty.
func (r *recency) oldest() sim.Key { return r.key(r.node[r.n].prev) }

// newer returns the key used just after k, or -1 when k is the most recent.
func (r *recency) newer(k sim.Key) sim.Key { return r.key(r.node[k].prev) }

func (r *recency) key(i int32) sim.Key {
	if i == r.n {
		return -1
	}
	return sim.Key(i)
}
