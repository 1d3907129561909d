package traces

// Trace statistics.
//
// ComputeStats makes one streaming pass over a Source and measures what the
// scheduling policies depend on, so a synthetic trace can be held against a
// recorded one. Formulas (k = the token's selection size at that layer, E = experts):
//
//   - next-token reuse = Σ|sel_t ∩ sel_{t−1}| / Σ|sel_t| over decode tokens t
//     whose previous position t−1 of the same sequence is in the trace, per
//     layer and overall. This is also the recall of the "previous token's
//     experts" predictor.
//   - reuse distance of a decode selection of expert e at layer l = trace steps
//     since e was last selected at l (by any token, any phase); selections never
//     seen before are cold. Median, p90, mean and a power-of-two histogram.
//   - popularity per layer over decode tokens (all tokens when the trace has no
//     decode token): distinct experts touched; the share of selections taken
//     by the top ⌈TopShare·E⌉ experts; normalized entropy −Σp·ln p / ln E.
//   - static hot-list recall = share of selections that fall in each layer's
//     HotList most popular experts of the same trace (in-sample, so optimistic):
//     the "no better than a static hot list" comparison.
//   - lookahead recall at depth d = Σ|topk(scores_{l→l+d}) ∩ sel_{l+d}| / Σ|sel_{l+d}|
//     over decode tokens, k = |sel_{l+d}|, ties broken by lower expert index.
//   - recorded hit rate = selections with Hit / selections, over decode tokens
//     and over all tokens (only when the trace carries Hit).
//
// A figure over no samples is 0; a trace without decode tokens, whose decode
// figures all are, carries a warning (Stats.Warnings, printed last as simulate
// prints its own).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lessim/lessim/internal/plural"
)

// StatsOptions tune ComputeStats. Zero values take the defaults.
type StatsOptions struct {
	// HotList is the size of the static hot list per layer (default: the model's top-k).
	HotList int
	// TopShare is the fraction of experts whose selection share is reported (default 0.10).
	TopShare float64
}

// Stats are a trace's routing statistics; see the comment at the top of stats.go.
// Fractions are in [0,1] and 0 when their sample count is 0.
type Stats struct {
	Origin  string `json:"origin"`
	Model   string `json:"model"`
	Layers  int    `json:"layers"`
	Experts int    `json:"experts"`
	TopK    int    `json:"top_k"`

	Tokens        int64 `json:"tokens"`
	PrefillTokens int64 `json:"prefill_tokens"`
	DecodeTokens  int64 `json:"decode_tokens"`
	// DraftTokens counts rejected speculative drafts (Phase Draft), which
	// no other figure counts.
	DraftTokens int64 `json:"draft_tokens,omitempty"`
	// Passes counts forward passes: a new pass starts when (Seq, Pass) changes
	// or Pass is -1 (unknown: one token per pass assumed).
	Passes    int64 `json:"passes"`
	Sequences int64 `json:"sequences"`

	// PopularityScope is "decode" or "all": which tokens the popularity figures count.
	PopularityScope string  `json:"popularity_scope"`
	HotList         int     `json:"hot_list"`
	TopShare        float64 `json:"top_share"`

	// Reuse is the next-token reuse fraction over ReusePairs selection slots.
	Reuse      float64 `json:"next_token_reuse"`
	ReuseSlots int64   `json:"reuse_slots"`
	// PrevTokenRecall is the recall of the previous-token predictor (equal to Reuse).
	PrevTokenRecall float64 `json:"prev_token_recall"`
	// HotListRecall is the static hot-list recall over all layers.
	HotListRecall float64 `json:"hot_list_recall"`

	ReuseDistance ReuseDistance `json:"reuse_distance"`

	// Lookahead holds the lookahead recall per depth (empty without scores).
	Lookahead []DepthRecall `json:"lookahead,omitempty"`
	// Hits is the recorded hit rate (nil when the trace has no Hit flags).
	Hits *HitRate `json:"hits,omitempty"`
	// DraftOverlap is how the recorded rejected drafts route (nil when the
	// trace records none).
	DraftOverlap *DraftOverlap `json:"draft_overlap,omitempty"`

	PerLayer []LayerStats `json:"per_layer"`

	// Warnings say which figures have no samples to stand on (a trace of
	// prefill only), so a 0 is not read as a measurement.
	Warnings []string `json:"warnings,omitempty"`
}

// NoDecodeWarning is Stats' warning for a trace without decode tokens.
const NoDecodeWarning = "trace has no decode tokens: next-token reuse, reuse distance, lookahead recall and the decode hit rate are over 0 decode tokens (shown as 0); popularity and hot-list recall count the prefill tokens"

// ReuseDistance summarizes reuse distances of decode selections, in trace steps.
type ReuseDistance struct {
	Samples int64            `json:"samples"` // selections with a previous use
	Cold    int64            `json:"cold"`    // selections never seen before at that layer
	Median  int64            `json:"median"`
	P90     int64            `json:"p90"`
	Mean    float64          `json:"mean"`
	Buckets []DistanceBucket `json:"buckets"`
}

// DistanceBucket counts reuse distances in [Lo, Hi] (Hi = 0: unbounded).
type DistanceBucket struct {
	Lo    int64   `json:"lo"`
	Hi    int64   `json:"hi"`
	Count int64   `json:"count"`
	Share float64 `json:"share"` // of Samples
}

// DepthRecall is the lookahead recall at top-k for one depth.
type DepthRecall struct {
	Depth  int     `json:"depth"`
	Recall float64 `json:"recall"`
	Slots  int64   `json:"slots"` // true selections scored
}

// HitRate is the recording engine's cache hit rate.
type HitRate struct {
	Decode       float64 `json:"decode"`
	DecodeSlots  int64   `json:"decode_slots"`
	Overall      float64 `json:"overall"`
	OverallSlots int64   `json:"overall_slots"`
}

// LayerStats are one MoE layer's figures.
type LayerStats struct {
	Layer         int     `json:"layer"`
	Distinct      int     `json:"distinct"`
	TopShare      float64 `json:"top_share"`
	Entropy       float64 `json:"entropy"`
	Reuse         float64 `json:"reuse"`
	HotListRecall float64 `json:"hot_list_recall"`
	Selections    int64   `json:"selections"`
}

// statsAcc is ComputeStats's running state.
type statsAcc struct {
	L, E                           int
	allCount                       []int64 // L×E selections, all tokens
	decCount                       []int64 // L×E selections, decode tokens
	lastSeen                       []int64 // L×E step index of the last selection, -1 = never
	prev                           []int32 // L×K previous step's selections
	prevLen                        []int   // L
	prevValid                      bool
	prevSeq                        int32
	prevPos                        int32
	prevPass                       int32
	reuseNum                       []int64 // L
	reuseDen                       []int64 // L
	dist                           []int64 // count by distance
	cold                           int64
	lookNum                        []int64 // per depth
	lookDen                        []int64
	hitDec, selDec, hitAll, selAll int64
	anyHit                         bool
	topk                           []int32 // scratch
	mark                           []int32 // E scratch stamps
	stamp                          int32
}

// ComputeStats measures src (whose shape is meta.Model) in one pass. It
// returns a positioned error for a step that does not fit the model.
func ComputeStats(meta Meta, src Source, opt StatsOptions) (*Stats, error) {
	m := &meta.Model
	L, E := len(m.Layers), m.Experts
	var errs []error
	if L == 0 {
		errs = append(errs, errors.New("stats: the trace's model has no MoE layers"))
	}
	if E <= 0 {
		errs = append(errs, fmt.Errorf("stats: the trace's model has %d experts per layer", E))
	}
	if opt.HotList < 0 || (E > 0 && opt.HotList > E) {
		errs = append(errs, fmt.Errorf("stats: hot list size %d must be in [0, experts=%d]", opt.HotList, E))
	}
	if !(opt.TopShare >= 0 && opt.TopShare <= 1) {
		errs = append(errs, fmt.Errorf("stats: top share %v must be in [0, 1]", opt.TopShare))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opt.HotList == 0 {
		opt.HotList = min(max(m.TopK, 1), E)
	}
	if opt.TopShare == 0 {
		opt.TopShare = 0.10
	}
	K := max(m.TopK, 1)
	a := &statsAcc{
		L: L, E: E,
		allCount: make([]int64, L*E),
		decCount: make([]int64, L*E),
		lastSeen: make([]int64, L*E),
		prev:     make([]int32, L*K),
		prevLen:  make([]int, L),
		reuseNum: make([]int64, L),
		reuseDen: make([]int64, L),
		mark:     make([]int32, E),
	}
	for i := range a.lastSeen {
		a.lastSeen[i] = -1
	}
	s := &Stats{
		Origin: meta.Origin, Model: m.Name, Layers: L, Experts: E, TopK: m.TopK,
		HotList: opt.HotList, TopShare: opt.TopShare,
	}
	var idx int64
	drafts := newDraftAcc(L)
	for ; src.Next(); idx++ {
		drafts.add(src.Step())
		if st := src.Step(); st.Phase == Draft {
			// NB: a rejected draft emitted nothing: the figures describe the
			// tokens the sequences hold.
			s.DraftTokens++
			idx--
			continue
		}
		if err := a.add(s, src.Step(), idx); err != nil {
			return nil, err
		}
	}
	if err := src.Err(); err != nil {
		return nil, err
	}
	a.finish(s)
	s.DraftOverlap = drafts.result()
	return s, nil
}

// add accounts one step.
func (a *statsAcc) add(s *Stats, st *Step, idx int64) error {
	if err := a.check(st, idx); err != nil {
		return err
	}
	s.Tokens++
	decode := st.Phase == Decode
	if decode {
		s.DecodeTokens++
	} else {
		s.PrefillTokens++
	}
	if idx == 0 || st.Seq != a.prevSeq {
		s.Sequences++
	}
	if idx == 0 || st.Seq != a.prevSeq || st.Pass != a.prevPass || st.Pass < 0 {
		s.Passes++
	}
	follows := a.prevValid && st.Seq == a.prevSeq && st.Pos == a.prevPos+1
	for l := range st.Layers {
		a.addLayer(st, l, idx, decode, follows)
	}
	// Last-seen and previous selection are updated after the whole step, so a
	// step's own selections (prefill repeats) do not count as distance 0.
	K := len(a.prev) / a.L
	for l := range st.Layers {
		ls := &st.Layers[l]
		for _, e := range ls.Experts {
			a.lastSeen[l*a.E+int(e)] = idx
		}
		n := min(len(ls.Experts), K)
		copy(a.prev[l*K:l*K+n], ls.Experts)
		a.prevLen[l] = n
	}
	a.prevValid, a.prevSeq, a.prevPos, a.prevPass = true, st.Seq, st.Pos, st.Pass
	return nil
}

// check returns a positioned error for a step that does not fit the model:
// its layer count, hit flags, expert indices and score vectors.
func (a *statsAcc) check(st *Step, idx int64) error {
	if len(st.Layers) != a.L {
		return fmt.Errorf("stats: step %d (seq %d pos %d): %d layers, the model has %d", idx, st.Seq, st.Pos, len(st.Layers), a.L)
	}
	for l := range st.Layers {
		ls := &st.Layers[l]
		if ls.Hit != nil && len(ls.Hit) != len(ls.Experts) {
			return fmt.Errorf("stats: step %d (seq %d pos %d) layer %d: %d hit flags for %d experts", idx, st.Seq, st.Pos, l, len(ls.Hit), len(ls.Experts))
		}
		for _, e := range ls.Experts {
			if e < 0 || int(e) >= a.E {
				return fmt.Errorf("stats: step %d (seq %d pos %d) layer %d: expert %d out of range [0, %d)", idx, st.Seq, st.Pos, l, e, a.E)
			}
		}
		for d, sc := range ls.Lookahead {
			if compactAt(ls, d) {
				continue
			}
			if sc != nil && len(sc) != a.E {
				return fmt.Errorf("stats: step %d (seq %d pos %d) layer %d: depth-%d scores have %d values, the model has %d experts", idx, st.Seq, st.Pos, l, d+1, len(sc), a.E)
			}
			if sc != nil && l+d+1 >= a.L {
				return fmt.Errorf("stats: step %d (seq %d pos %d) layer %d: depth-%d scores point past the last layer", idx, st.Seq, st.Pos, l, d+1)
			}
		}
	}
	return nil
}

// addLayer accounts layer l of step idx (a checked step): reuse of the
// previous token's experts when it follows one, popularity, reuse distance,
// hit flags and, for a decode token, lookahead recall.
func (a *statsAcc) addLayer(st *Step, l int, idx int64, decode, follows bool) {
	ls := &st.Layers[l]
	row := l * a.E
	K := len(a.prev) / a.L
	if decode && follows && a.prevLen[l] > 0 && len(ls.Experts) > 0 {
		prev := a.prev[l*K : l*K+a.prevLen[l]]
		for _, e := range ls.Experts {
			if slices.Contains(prev, e) {
				a.reuseNum[l]++
			}
		}
		a.reuseDen[l] += int64(len(ls.Experts))
	}
	for i, e := range ls.Experts {
		a.allCount[row+int(e)]++
		if decode {
			a.decCount[row+int(e)]++
			a.distance(idx, a.lastSeen[row+int(e)])
		}
		if ls.Hit != nil {
			a.hit(ls.Hit[i], decode)
		}
	}
	if decode {
		a.lookahead(st, l)
	}
}

// distance counts one decode selection whose expert was last selected at
// step last (-1: never, a cold selection) from step idx.
func (a *statsAcc) distance(idx, last int64) {
	if last < 0 {
		a.cold++
		return
	}
	if d := idx - last; d > 0 {
		for int64(len(a.dist)) <= d {
			a.dist = append(a.dist, 0)
		}
		a.dist[d]++
	}
}

// hit counts one selection's recorded hit flag.
func (a *statsAcc) hit(hit, decode bool) {
	a.anyHit = true
	var h int64
	if hit {
		h = 1
	}
	a.hitAll += h
	a.selAll++
	if decode {
		a.hitDec += h
		a.selDec++
	}
}

// lookahead counts, per depth, how many of the later layers' true experts
// layer l's lookahead scores (or their compact index) put in the top-k.
func (a *statsAcc) lookahead(st *Step, l int) {
	ls := &st.Layers[l]
	for d, sc := range ls.Lookahead {
		if sc == nil {
			continue
		}
		truth := st.Layers[l+d+1].Experts
		for len(a.lookNum) <= d {
			a.lookNum = append(a.lookNum, 0)
			a.lookDen = append(a.lookDen, 0)
		}
		if compactAt(ls, d) {
			a.lookNum[d] += int64(indexOverlap(&ls.LookaheadIndex[d], truth))
		} else {
			a.lookNum[d] += int64(a.topkOverlap(sc, truth))
		}
		a.lookDen[d] += int64(len(truth))
	}
}

// topkOverlap counts how many of truth are in the top-len(truth) of scores
// (ties broken by lower expert index).
func (a *statsAcc) topkOverlap(scores []float32, truth []int32) int {
	k := len(truth)
	if k == 0 {
		return 0
	}
	top := a.topk[:0]
	better := func(x, y int32) bool { // x ranks before y
		return scores[x] > scores[y] || (scores[x] == scores[y] && x < y)
	}
	for e, v := range scores {
		x := int32(e)
		// NB: x > every kept index, so on equal scores the kept expert stays ahead.
		if len(top) == k && v <= scores[top[k-1]] {
			continue
		}
		i := len(top)
		if i < k {
			top = append(top, x)
		} else {
			i = k - 1
		}
		for i > 0 && better(x, top[i-1]) {
			top[i] = top[i-1]
			i--
		}
		top[i] = x
	}
	a.topk = top
	a.stamp++
	for _, e := range top {
		a.mark[e] = a.stamp
	}
	n := 0
	for _, e := range truth {
		if a.mark[e] == a.stamp {
			n++
		}
	}
	return n
}

// finish derives the summary figures.
func (a *statsAcc) finish(s *Stats) {
	counts, scope := a.decCount, "decode"
	if s.DecodeTokens == 0 {
		counts, scope = a.allCount, "all"
		s.Warnings = append(s.Warnings, NoDecodeWarning)
	}
	s.PopularityScope = scope
	var reuseNum, reuseDen, hotNum, hotDen int64
	sorted := make([]int64, a.E)
	for l := range a.L {
		ls, hot := a.layerStats(s, l, counts[l*a.E:(l+1)*a.E], sorted)
		s.PerLayer = append(s.PerLayer, ls)
		reuseNum += a.reuseNum[l]
		reuseDen += a.reuseDen[l]
		hotNum += hot
		hotDen += ls.Selections
	}
	s.Reuse = frac(reuseNum, reuseDen)
	s.ReuseSlots = reuseDen
	s.PrevTokenRecall = s.Reuse
	s.HotListRecall = frac(hotNum, hotDen)
	a.reuseDistance(&s.ReuseDistance)
	for d := range a.lookNum {
		s.Lookahead = append(s.Lookahead, DepthRecall{Depth: d + 1, Recall: frac(a.lookNum[d], a.lookDen[d]), Slots: a.lookDen[d]})
	}
	if a.anyHit {
		s.Hits = &HitRate{
			Decode: frac(a.hitDec, a.selDec), DecodeSlots: a.selDec,
			Overall: frac(a.hitAll, a.selAll), OverallSlots: a.selAll,
		}
	}
}

// frac is n/d, or 0 when d is 0.
func frac(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// layerStats summarizes layer l from its selection counts per expert (row);
// sorted is scratch of the row's length. It also returns the selections of
// the layer's static hot list (its s.HotList most selected experts).
func (a *statsAcc) layerStats(s *Stats, l int, row, sorted []int64) (LayerStats, int64) {
	var total int64
	distinct := 0
	h := 0.0
	for _, c := range row {
		total += c
		if c > 0 {
			distinct++
		}
	}
	for _, c := range row {
		if c > 0 {
			p := float64(c) / float64(total)
			h -= p * math.Log(p)
		}
	}
	copy(sorted, row)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	var top, hot int64
	for i := range int(math.Ceil(s.TopShare * float64(a.E))) {
		top += sorted[i]
	}
	for i := range s.HotList {
		hot += sorted[i]
	}
	ent := 0.0
	if a.E > 1 {
		ent = h / math.Log(float64(a.E))
	}
	return LayerStats{
		Layer:         l,
		Distinct:      distinct,
		TopShare:      frac(top, total),
		Entropy:       ent,
		Reuse:         frac(a.reuseNum[l], a.reuseDen[l]),
		HotListRecall: frac(hot, total),
		Selections:    total,
	}, hot
}

// reuseDistance summarizes the decode reuse distances counted: cold
// selections, mean, median, p90 and power-of-two buckets up to 128+.
func (a *statsAcc) reuseDistance(rd *ReuseDistance) {
	rd.Cold = a.cold
	var sum int64
	for d, c := range a.dist {
		rd.Samples += c
		sum += int64(d) * c
	}
	rd.Mean = frac(sum, rd.Samples)
	rd.Median = statsQuantile(a.dist, rd.Samples, 0.5)
	rd.P90 = statsQuantile(a.dist, rd.Samples, 0.9)
	for lo := int64(1); ; lo *= 2 {
		hi := 2*lo - 1
		if lo >= 128 {
			hi = 0
		}
		b := DistanceBucket{Lo: lo, Hi: hi}
		for d := lo; d < int64(len(a.dist)) && (hi == 0 || d <= hi); d++ {
			b.Count += a.dist[d]
		}
		b.Share = frac(b.Count, rd.Samples)
		rd.Buckets = append(rd.Buckets, b)
		if hi == 0 {
			break
		}
	}
}

// statsQuantile is the smallest distance d with at least q of n samples ≤ d
// (counts[d] samples at distance d); 0 when n is 0.
func statsQuantile(counts []int64, n int64, q float64) int64 {
	if n == 0 {
		return 0
	}
	need := int64(math.Ceil(q * float64(n)))
	var acc int64
	for d, c := range counts {
		acc += c
		if acc >= need && c > 0 {
			return int64(d)
		}
	}
	return int64(len(counts) - 1)
}

// WriteText renders s as aligned text with fixed decimal places (deterministic).
func (s *Stats) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("trace\t%s\tmodel %s: %d layers × %d experts, top-%d\n", s.Origin, s.Model, s.Layers, s.Experts, s.TopK)
	p("tokens\t%d\tprefill %d, decode %d; %s, %s\n", s.Tokens, s.PrefillTokens, s.DecodeTokens, plural.CountAs(int(s.Passes), "pass", "passes"), plural.Count(int(s.Sequences), "sequence"))
	p("next-token reuse\t%.4f\tover %d decode slots (= previous-token predictor recall)\n", s.Reuse, s.ReuseSlots)
	p("static hot-list recall\t%.4f\ttop-%d per layer, in-sample, %s tokens\n", s.HotListRecall, s.HotList, s.PopularityScope)
	rd := s.ReuseDistance
	p("reuse distance\tmedian %d\tp90 %d, mean %.2f steps; %d reused, %d cold\n", rd.Median, rd.P90, rd.Mean, rd.Samples, rd.Cold)
	for _, d := range s.Lookahead {
		p("lookahead recall\t%.4f\tdepth %d at top-k, over %d decode slots\n", d.Recall, d.Depth, d.Slots)
	}
	if s.Lookahead == nil {
		p("lookahead recall\t-\tno scores in trace\n")
	}
	if h := s.Hits; h != nil {
		p("recorded hit rate\t%.4f\tdecode (%d slots); overall %.4f (%d slots)\n", h.Decode, h.DecodeSlots, h.Overall, h.OverallSlots)
	}
	if d := s.DraftOverlap; d != nil {
		p("rejected drafts\t%d\tshare of a draft's experts also selected by the token before it %.4f, its pass's accepted tokens %.4f, the next accepted token %.4f\n",
			d.Drafts, d.Prev, d.Block, d.Next)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "\nreuse distance (steps)"); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p("distance\tcount\tshare\t\n")
	for _, b := range rd.Buckets {
		r := fmt.Sprintf("%d-%d", b.Lo, b.Hi)
		switch {
		case b.Hi == 0:
			r = fmt.Sprintf("≥%d", b.Lo)
		case b.Lo == b.Hi:
			r = fmt.Sprint(b.Lo)
		}
		p("%s\t%d\t%.4f\t\n", r, b.Count, b.Share)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\nper layer (popularity over %s tokens)\n", s.PopularityScope); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p("layer\tselections\tdistinct\ttop %.0f%% share\tentropy\treuse\thot-list recall\t\n", s.TopShare*100)
	for _, l := range s.PerLayer {
		p("%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t\n", l.Layer, l.Selections, l.Distinct, l.TopShare, l.Entropy, l.Reuse, l.HotListRecall)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeWarnings(w, s.Warnings)
}

// writeWarnings lists warnings after a blank line, as simulate does.
func writeWarnings(w io.Writer, warnings []string) error {
	if len(warnings) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\nwarnings:\n")
	for _, m := range warnings {
		fmt.Fprintf(&b, "  - %s\n", m)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String renders s as WriteText does.
func (s *Stats) String() string {
	var b strings.Builder
	_ = s.WriteText(&b)
	return b.String()
}

// MarshalJSONIndent is s as indented JSON (snake_case keys), newline-terminated.
func (s *Stats) MarshalJSONIndent() ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// compactAt says depth d+1 of ls is compact lookahead (Meta.LookaheadTop):
// an empty vector whose candidates are in LookaheadIndex.
func compactAt(ls *LayerStep, d int) bool {
	return ls.Lookahead[d] != nil && len(ls.Lookahead[d]) == 0 && d < len(ls.LookaheadIndex)
}

// indexOverlap counts the truth experts among ci's best len(truth)
// candidates (fewer when the file stores fewer than top-k).
func indexOverlap(ci *CandidateIndex, truth []int32) int {
	n := 0
	for _, e := range ci.Top[:min(len(truth), len(ci.Top))] {
		if slices.Contains(truth, e) {
			n++
		}
	}
	return n
}
