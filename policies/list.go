package policies

import "github.com/lessim/lessim/sim"

// recency is an intrusive doubly-linked list over every key of a model, kept in
// one flat slice of nodes (no map, no allocation per operation). The head side
// is the most recently used end; the tail side the least recently used. The
// last node is the sentinel, so an empty list has its prev and next pointing
// at itself; an absent key has prev == -1.
//
// Each node also carries the key's payload V: a policy's other per-key state
// (struct{} for none), so that touching a key reads and writes one node, one
// cache line, rather than one line per array of state (les: 16-byte nodes,
// four to a line).
//
// NB: the methods take the list by value (it is one slice header, never
// resized): a caller's local copy then stays in registers across the stores
// through its nodes, where a pointer's fields would be reloaded after each.
type recency[V any] struct {
	node []node[V]
}

// node is one key's neighbours in the list and its payload.
type node[V any] struct {
	prev, next int32
	val        V
}

// newRecency makes an empty list for keys 0..n-1, every payload zero.
func newRecency[V any](n int) recency[V] {
	r := recency[V]{node: make([]node[V], n+1)}
	for i := range n {
		r.node[i].prev = -1
	}
	r.node[n].prev, r.node[n].next = int32(n), int32(n)
	return r
}

// sentinel is the index of the sentinel node (the number of keys).
func (r recency[V]) sentinel() int32 { return int32(len(r.node) - 1) }

// valid reports whether k names a key of the list.
func (r recency[V]) valid(k sim.Key) bool { return uint(k) < uint(len(r.node)-1) }

// at is k's payload; k must be valid.
func (r recency[V]) at(k sim.Key) *V { return &r.node[k].val }

// touch moves k to the most recently used end, inserting it if absent; k
// must be valid (small enough to inline where the check is the caller's).
func (r recency[V]) touch(k sim.Key) {
	nodes := r.node
	i, s := int32(k), int32(len(nodes)-1) // s: the sentinel
	first := nodes[s].next
	if first == i {
		return // already most recent
	}
	// NB: i is not first, so unlinking it leaves the head's next as it was.
	l := &nodes[i]
	if l.prev >= 0 {
		nodes[l.prev].next, nodes[l.next].prev = l.next, l.prev
	}
	l.prev, l.next = s, first // only the links: the payload stays
	nodes[first].prev = i
	nodes[s].next = i
}

// observe applies an engine event: uses and admissions make k the most
// recent; evictions drop it.
func (r recency[V]) observe(ev sim.Event) {
	switch ev.Kind {
	case sim.Used, sim.Admitted:
		if r.valid(ev.Key) {
			r.touch(ev.Key)
		}
	case sim.Evicted:
		r.remove(ev.Key)
	}
}

// remove takes k out of the list; absent keys are ignored.
func (r recency[V]) remove(k sim.Key) {
	if !r.valid(k) {
		return
	}
	l := &r.node[k]
	if l.prev < 0 {
		return
	}
	r.node[l.prev].next, r.node[l.next].prev = l.next, l.prev
	l.prev = -1
}

// oldest returns the least recently used key, or -1 when the list is empty.
func (r recency[V]) oldest() sim.Key { return r.key(r.node[r.sentinel()].prev) }

// newer returns the key used just after k, or -1 when k is the most recent.
func (r recency[V]) newer(k sim.Key) sim.Key { return r.key(r.node[k].prev) }

func (r recency[V]) key(i int32) sim.Key {
	if i == r.sentinel() {
		return -1
	}
	return sim.Key(i)
}
