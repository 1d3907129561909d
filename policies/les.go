package policies

import (
	"cmp"
	"slices"

	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

var (
	_ sim.Policy          = (*LES)(nil)
	_ sim.UsesObserver    = (*LES)(nil)
	_ sim.LookaheadRouter = (*LES)(nil)
	_ sim.LoadObserver    = (*LES)(nil)
)

// LES is Lookahead Expert Scheduling. At moment 1 of layer l it reads the
// lookahead router scores for layers l+1..l+Depth (layer l's router input fed
// to the later routers), picks each token's candidates (its TopN highest
// scores, or with Threshold > 0 the smallest set whose cumulative softmax
// probability reaches Threshold, at most MaxCandidates), and asks for their
// union over the pass, most wanted first: depth 1 before depth 2, then higher
// score (a key wanted by several tokens ranks by its best score), then lower key.
// It stops adding once its request plus the bytes already loading would exceed
// MaxInflightBytes (0 = no cap).
//
// Eviction is LRU (prefetched keys enter at the most recent end when
// admitted). When the room is for a prefetch, LES skips keys that were
// themselves prefetched in this pass for a layer not yet computed, and declines
// rather than evict a key used in the current pass. Demand misses evict plain LRU.
// With no scores, Prefetch=false or Depth=0 it never prefetches, so it is
// never asked for prefetch room and behaves exactly like OnDemand.
//
// Candidates come from the trace's precomputed index when it covers what is
// asked for, else from a partial selection over the score vector
// (traces.TopIndices) in reused buffers: no allocation per layer once the
// buffers have grown. A single token's candidates are named in place; only a
// union of several is gathered and sorted.
type LES struct {
	p       Params
	layers  int
	experts int
	list    recency[lesKey] // recency, each key's pass state beside its links

	// Pass tracking: passes are numbered from 1 (0 marks "never"); each
	// PassStart event starts the next.
	pass      uint32
	usedLayer int // latest layer with Used events in this pass (-1: none)

	mark     []uint32  // per expert of a layer: mark[e] == gen: e already named
	gen      uint32    // one generation per (Prefetch call, depth)
	top      []int32   // scratch: selected experts of one score vector, or of a union
	topScore []float32 // scratch: their scores
	cands    []candidate
}

// lesKey is one key's pass state, kept in its recency node.
type lesKey struct {
	usedPass uint32 // pass of the key's latest Used event
	guard    uint32 // pass in which the key was admitted by a prefetch (0: not)
}

// candidate is one expert a token's lookahead wants, with its score.
type candidate struct {
	expert int32
	score  float32
}

// budget is a Prefetch call's in-flight cap: with limit > 0, the bytes of
// the absent keys asked for may not exceed room.
type budget struct {
	limit, room, asked int64
}

// NewLES builds a lookahead policy for p.Model from p.TopN, p.Threshold,
// p.MaxCandidates, p.Depth, p.MaxInflightBytes and p.Prefetch.
func NewLES(p Params) (*LES, error) {
	p, err := p.resolve("les")
	if err != nil {
		return nil, err
	}
	return &LES{
		p: p, layers: len(p.Model.Layers), experts: p.Model.Experts,
		list: newRecency[lesKey](numKeys(p.Model)),
		pass: 1, usedLayer: -1, mark: make([]uint32, p.Model.Experts),
	}, nil
}

// Name is the registry name.
func (s *LES) Name() string { return "les" }

func (s *LES) newPass() {
	s.pass++
	s.usedLayer = -1
}

// Prefetch appends the lookahead candidates of layers la.Layer+1..+Depth.
func (s *LES) Prefetch(la *sim.Lookahead, view sim.CacheView, dst []sim.Key) []sim.Key {
	if !s.p.Prefetch || s.p.Depth == 0 || la.Scores == nil {
		return dst
	}
	b := budget{limit: s.p.MaxInflightBytes}
	if b.limit > 0 {
		b.room = b.limit - view.LoadingBytes()
	}
	for d := 1; d <= s.p.Depth; d++ {
		if la.Layer+d >= s.layers {
			break
		}
		var full bool
		if dst, full = s.prefetchLayer(la, d, view, &b, dst); full {
			break
		}
	}
	return dst
}

// prefetchLayer names the depth-d candidates (of layer la.Layer+d): the
// union of every token's, best first; full reports that the in-flight cap
// stopped it.
func (s *LES) prefetchLayer(la *sim.Lookahead, d int, view sim.CacheView, b *budget, dst []sim.Key) (_ []sim.Key, full bool) {
	tokens, last := 0, 0
	for t, tok := range la.Scores {
		if len(tok) >= d {
			tokens, last = tokens+1, t
		}
	}
	var top []int32
	switch {
	case tokens == 1:
		// NB: one vector's candidates are already best first, ties lower
		// expert first: only a union of several needs sorting.
		top, _ = s.candidates(la, last, d)
		if b.limit <= 0 {
			return appendKeys(dst, top, sim.Key((la.Layer+d)*s.experts)), false
		}
	case tokens > 1:
		top = s.union(la, d)
	}
	return s.name(top, la.Layer+d, view, b, dst)
}

// appendKeys appends one vector's candidates top as keys from base, without
// the marks that keep a union's names unique. NB: a vector's candidates are
// distinct, unless a trace file's compact index repeats one; the Books skip
// such a repeat (by then its key is loading or resident, or admitting it
// failed and ended the naming), so naming it twice changes nothing.
func appendKeys(dst []sim.Key, top []int32, base sim.Key) []sim.Key {
	n := len(dst)
	dst = slices.Grow(dst, len(top))[:n+len(top)]
	for i, e := range top {
		dst[n+i] = base + sim.Key(e)
	}
	return dst
}

// union is the depth-d candidates of every token, best first: higher score,
// then lower expert. An expert wanted by several tokens appears once per
// token; its first (best) place is the one named.
func (s *LES) union(la *sim.Lookahead, d int) []int32 {
	s.cands = s.cands[:0]
	for t, tok := range la.Scores {
		if len(tok) < d {
			continue
		}
		top, score := s.candidates(la, t, d)
		for i, e := range top {
			s.cands = append(s.cands, candidate{e, score[i]})
		}
	}
	slices.SortFunc(s.cands, func(a, b candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.expert, b.expert)
	})
	s.top = s.top[:0]
	for _, c := range s.cands {
		s.top = append(s.top, c.expert)
	}
	return s.top
}

// name appends to dst the keys of layer's experts top, in order, each once,
// until the in-flight cap b stops it (full).
func (s *LES) name(top []int32, layer int, view sim.CacheView, b *budget, dst []sim.Key) (_ []sim.Key, full bool) {
	s.gen++
	if s.gen == 0 { // wrapped: forget old marks
		clear(s.mark)
		s.gen = 1
	}
	base := sim.Key(layer * s.experts)
	if b.limit <= 0 {
		return s.nameAll(top, base, dst), false
	}
	gen, mark := s.gen, s.mark
	eb := view.ExpertBytes(layer)
	for _, e := range top {
		if mark[e] == gen {
			continue
		}
		mark[e] = gen
		k := base + sim.Key(e)
		// NB: resident and loading candidates are named too (the engine
		// skips them and they cost no bytes), so the engine's prefetch
		// recall and precision measure the prediction itself.
		if view.State(k) == sim.Absent {
			if b.asked+eb > b.room {
				return dst, true
			}
			b.asked += eb
		}
		dst = append(dst, k)
	}
	return dst, false
}

// nameAll is name without an in-flight cap: every expert of top, each once,
// as keys from base. NB: the keys are written into room made beforehand,
// not appended: an append's call to grow, even never taken, makes the
// compiler spill the loop's registers around it on every key.
func (s *LES) nameAll(top []int32, base sim.Key, dst []sim.Key) []sim.Key {
	gen, mark := s.gen, s.mark
	n := len(dst)
	dst = slices.Grow(dst, len(top))[:n+len(top)]
	for _, e := range top {
		if mark[e] == gen {
			continue
		}
		mark[e] = gen
		dst[n] = base + sim.Key(e)
		n++
	}
	return dst[:n]
}

// Observe keeps passes, recency, the pass's used keys and the guarded prefetches.
func (s *LES) Observe(ev sim.Event) {
	if ev.Kind == sim.PassStart {
		s.newPass()
		return
	}
	switch ev.Kind {
	case sim.Used:
		s.ObserveUses([]sim.Key{ev.Key}, ev.Layer, ev.Step)
	case sim.Admitted:
		s.Admitted(ev.Key, ev.Prefetch)
	case sim.Evicted:
		s.Evicted(ev.Key)
	}
}

// Admitted is Observe for an admission: k becomes the most recent, guarded
// for this pass when a prefetch brought it.
func (s *LES) Admitted(k sim.Key, prefetch bool) {
	if !s.list.valid(k) {
		return
	}
	s.list.touch(k)
	ks := s.list.at(k)
	ks.guard = 0
	if prefetch {
		ks.guard = s.pass
	}
}

// Evicted is Observe for an eviction: k leaves the list, unguarded.
func (s *LES) Evicted(k sim.Key) {
	if !s.list.valid(k) {
		return
	}
	s.list.remove(k)
	s.list.at(k).guard = 0
}

// ObserveUses is Observe for a layer's Used events, in order.
func (s *LES) ObserveUses(keys []sim.Key, layer int, _ int64) {
	// NB: a local copy of the list (its slice header) and pass, so that the
	// stores through the nodes do not force them to be reloaded.
	list, pass, used := s.list, s.pass, false
	for _, k := range keys {
		if !list.valid(k) {
			continue
		}
		used = true
		list.at(k).usedPass = pass
		list.touch(k)
	}
	// NB: every key is of layer, so the pass's latest used layer moves once.
	if used {
		s.usedLayer = max(s.usedLayer, layer)
	}
}

// guarded reports whether k was prefetched in this pass for a layer not yet computed.
func (s *LES) guarded(k sim.Key) bool {
	// NB: k/experts > usedLayer, without the division (k >= 0).
	return s.list.at(k).guard == s.pass && int(k) >= (s.usedLayer+1)*s.experts
}

// Victim names the least recently used evictable key. For a prefetch it skips
// guarded prefetches and declines at the first key used in the current pass.
func (s *LES) Victim(view sim.CacheView, _ int64, forPrefetch bool) (sim.Key, bool) {
	for k := s.list.oldest(); k >= 0; k = s.list.newer(k) {
		if !view.Evictable(k) {
			continue
		}
		if forPrefetch {
			if s.guarded(k) {
				continue
			}
			if s.list.at(k).usedPass == s.pass {
				return 0, false
			}
		}
		return k, true
	}
	return 0, false
}

// candidates are token t's candidates at depth d, best first, with their
// scores: its TopN best experts, or the smallest prefix (at most
// MaxCandidates) whose softmax probability reaches Threshold. The vector's
// precomputed index, when it covers the n candidates asked for, is read in
// place (same results, no scan of every score); otherwise they are selected
// into the scratch buffers, valid until the next call.
func (s *LES) candidates(la *sim.Lookahead, t, d int) (top []int32, score []float32) {
	scores := la.Scores[t][d-1]
	var ci *traces.CandidateIndex
	if t < len(la.Index) && len(la.Index[t]) >= d {
		ci = &la.Index[t][d-1]
	}
	if len(scores) > s.experts {
		scores, ci = scores[:s.experts], nil
	}
	n := s.p.TopN
	if s.p.Threshold > 0 {
		n = s.p.MaxCandidates
	}
	indexed := ci != nil && (len(ci.Top) >= n || ci.Complete)
	if indexed {
		k := min(n, len(ci.Top))
		top, score = ci.Top[:k], ci.Score[:k]
	} else {
		s.top = traces.TopIndices(s.top[:0], scores, n)
		s.topScore = s.topScore[:0]
		for _, e := range s.top {
			s.topScore = append(s.topScore, scores[e])
		}
		top, score = s.top, s.topScore
	}
	if len(top) == 0 || s.p.Threshold <= 0 {
		return top, score
	}
	// NB: top scores are never NaN (TopIndices skips them), so they need no ScoreOf.
	best := float64(score[0])
	sum := 0.0
	if indexed && ci.HasSum {
		sum = ci.ExpSum
	} else {
		sum = traces.SoftmaxSum(scores, score[0])
	}
	var cum float64
	for i := range top {
		cum += traces.ExpNaN0(float64(score[i])-best) / sum
		if cum >= s.p.Threshold {
			return top[:i+1], score[:i+1]
		}
	}
	return top, score
}

// UsesLookahead reports whether les runs the next layer's router on the
// current input, that is whether it prefetches (a GPU backend charges a
// synchronisation for it).
func (s *LES) UsesLookahead() bool { return s.p.Prefetch }
