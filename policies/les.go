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
// Candidate selection is a partial selection (a bounded heap over one score
// vector, then an insertion sort of the few survivors) in reused buffers: no
// allocation per layer once the buffers have grown.
type LES struct {
	p       Params
	layers  int
	experts int
	list    recency

	// Pass tracking: passes are numbered from 1 (0 marks "never"); each
	// PassStart event starts the next.
	pass      uint32
	usedLayer int      // latest layer with Used events in this pass (-1: none)
	usedPass  []uint32 // pass of each key's latest Used event
	guard     []uint32 // pass in which each key was admitted by a prefetch (0: not)

	mark     []uint32 // mark[k] == gen: k already considered in this Prefetch call
	gen      uint32
	top      []int32   // scratch: selected experts of one score vector
	topScore []float32 // scratch: their scores
	cands    []candidate
}

// candidate is one key a token's lookahead wants, with its score.
type candidate struct {
	key   sim.Key
	score float32
}

// NewLES builds a lookahead policy for p.Model from p.TopN, p.Threshold,
// p.MaxCandidates, p.Depth, p.MaxInflightBytes and p.Prefetch.
func NewLES(p Params) (*LES, error) {
	p, err := p.resolve("les")
	if err != nil {
		return nil, err
	}
	n := numKeys(p.Model)
	return &LES{
		p: p, layers: len(p.Model.Layers), experts: p.Model.Experts, list: newRecency(n),
		pass: 1, usedLayer: -1,
		usedPass: make([]uint32, n), guard: make([]uint32, n), mark: make([]uint32, n),
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
	s.gen++
	if s.gen == 0 { // wrapped: forget old marks
		clear(s.mark)
		s.gen = 1
	}
	limit := s.p.MaxInflightBytes
	var room, asked int64
	if limit > 0 {
		room = limit - view.LoadingBytes()
	}
	for d := 1; d <= s.p.Depth; d++ {
		layer := la.Layer + d
		if layer >= s.layers {
			break
		}
		s.cands = s.cands[:0]
		vectors := 0
		for t, tok := range la.Scores {
			if len(tok) >= d {
				var ci *traces.CandidateIndex
				if t < len(la.Index) && len(la.Index[t]) >= d {
					ci = &la.Index[t][d-1]
				}
				s.selectCandidates(tok[d-1], ci, layer)
				vectors++
			}
		}
		// NB: one vector's candidates are already best first, ties lower
		// expert (= lower key) first: only a union of several needs sorting.
		if vectors > 1 {
			slices.SortFunc(s.cands, func(a, b candidate) int {
				if c := cmp.Compare(b.score, a.score); c != 0 {
					return c
				}
				return cmp.Compare(a.key, b.key)
			})
		}
		eb := view.ExpertBytes(layer)
		for _, c := range s.cands {
			if s.mark[c.key] == s.gen {
				continue
			}
			s.mark[c.key] = s.gen
			// NB: resident and loading candidates are named too (the engine
			// skips them and they cost no bytes), so the engine's prefetch
			// recall and precision measure the prediction itself.
			if limit > 0 && view.State(c.key) == sim.Absent {
				if asked+eb > room {
					return dst
				}
				asked += eb
			}
			dst = append(dst, c.key)
		}
	}
	return dst
}

// Observe keeps passes, recency, the pass's used keys and the guarded prefetches.
func (s *LES) Observe(ev sim.Event) {
	if ev.Kind == sim.PassStart {
		s.newPass()
		return
	}
	k := ev.Key
	if !s.list.valid(k) {
		return
	}
	switch ev.Kind {
	case sim.Used:
		s.usedLayer = max(s.usedLayer, ev.Layer)
		s.usedPass[k] = s.pass
		s.list.touch(k)
	case sim.Admitted:
		s.list.touch(k)
		s.guard[k] = 0
		if ev.Prefetch {
			s.guard[k] = s.pass
		}
	case sim.Evicted:
		s.list.remove(k)
		s.guard[k] = 0
	}
}

// ObserveUses is Observe for a layer's Used events, in order.
func (s *LES) ObserveUses(keys []sim.Key, layer int, _ int64) {
	for _, k := range keys {
		if !s.list.valid(k) {
			continue
		}
		s.usedLayer = max(s.usedLayer, layer)
		s.usedPass[k] = s.pass
		s.list.touch(k)
	}
}

// guarded reports whether k was prefetched in this pass for a layer not yet computed.
func (s *LES) guarded(k sim.Key) bool {
	// NB: k/experts > usedLayer, without the division (k >= 0).
	return s.guard[k] == s.pass && int(k) >= (s.usedLayer+1)*s.experts
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
			if s.usedPass[k] == s.pass {
				return 0, false
			}
		}
		return k, true
	}
	return 0, false
}

// selectCandidates appends to s.cands the candidates of one token's score
// vector for layer: its TopN best experts, or the smallest prefix (best first,
// at most MaxCandidates) whose softmax probability reaches Threshold. ci,
// when not nil, is the vector's precomputed index: used when it covers the n
// candidates asked for (same results, no scan of every score).
func (s *LES) selectCandidates(scores []float32, ci *traces.CandidateIndex, layer int) {
	if len(scores) > s.experts {
		scores, ci = scores[:s.experts], nil
	}
	n := s.p.TopN
	if s.p.Threshold > 0 {
		n = s.p.MaxCandidates
	}
	indexed := ci != nil && (len(ci.Top) >= n || ci.Complete)
	// NB: an indexed vector's candidates are read in place, not copied.
	var top []int32
	var topScore []float32
	if indexed {
		k := min(n, len(ci.Top))
		top, topScore = ci.Top[:k], ci.Score[:k]
	} else {
		s.top = traces.TopIndices(s.top[:0], scores, n)
		s.topScore = s.topScore[:0]
		for _, e := range s.top {
			s.topScore = append(s.topScore, scores[e])
		}
		top, topScore = s.top, s.topScore
	}
	if len(top) == 0 {
		return
	}
	base := layer * s.experts
	if s.p.Threshold <= 0 {
		for i, e := range top {
			s.cands = append(s.cands, candidate{sim.Key(base + int(e)), topScore[i]})
		}
		return
	}
	// NB: top scores are never NaN (TopIndices skips them), so they need no ScoreOf.
	best := float64(topScore[0])
	sum := 0.0
	if indexed && ci.HasSum {
		sum = ci.ExpSum
	} else {
		sum = traces.SoftmaxSum(scores, topScore[0])
	}
	var cum float64
	for i, e := range top {
		s.cands = append(s.cands, candidate{sim.Key(base + int(e)), topScore[i]})
		cum += traces.ExpNaN0(float64(topScore[i])-best) / sum
		if cum >= s.p.Threshold {
			break
		}
	}
}

// UsesLookahead reports whether les runs the next layer's router on the
// current input, that is whether it prefetches (a GPU backend charges a
// synchronisation for it).
func (s *LES) UsesLookahead() bool { return s.p.Prefetch }
