package traces

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// pqColKind is what a reader accepts in a column: any integer type for the
// scalar columns (files rewritten by DuckDB or pandas may widen them), and for
// vector columns a list, large list or fixed-size list of one element type.
type pqColKind int

const (
	pqKindInt pqColKind = iota
	pqKindInt32List
	pqKindFloat32List
	pqKindBoolList
	pqKindFloat64
)

func (k pqColKind) String() string {
	return [...]string{"an integer", "a list of int32", "a list of float32", "a list of bool", "a float64"}[k]
}

// pqWanted lists the columns meta needs, in pqBatch.bind's order, and whether each
// is required.
func pqWanted(m *Meta, noWeights bool) (names []string, kinds []pqColKind, required []bool) {
	add := func(n string, k pqColKind, req bool) {
		names, kinds, required = append(names, n), append(kinds, k), append(required, req)
	}
	add(colSeq, pqKindInt, true)
	add(colPos, pqKindInt, true)
	add(colPhase, pqKindInt, true)
	add(colPass, pqKindInt, true)
	add(colLayer, pqKindInt, true)
	add(colExperts, pqKindInt32List, true)
	if !noWeights {
		add(colWeights, pqKindFloat32List, true)
	}
	if m.HasLogits {
		add(colLogits, pqKindFloat32List, true)
	}
	for d := 1; d <= m.LookaheadDepth; d++ {
		if m.LookaheadTop > 0 {
			add(pqLookTopName(d), pqKindInt32List, true)
			add(pqLookScoreName(d), pqKindFloat32List, true)
			add(pqLookSumName(d), pqKindFloat64, true)
			continue
		}
		add(pqLookaheadName(d), pqKindFloat32List, true)
	}
	if m.HasRouterInputs {
		add(colRouterInput, pqKindFloat32List, true)
	}
	add(colHit, pqKindBoolList, false)
	add(colComputeNS, pqKindInt, true)
	return names, kinds, required
}

// pqCheckColumns checks sc against what meta needs and returns the top-level
// field index of each wanted column that is present, in pqWanted order. It
// reports every missing or mistyped column at once. Other columns are ignored.
func pqCheckColumns(sc *arrow.Schema, m *Meta, noWeights bool) ([]int, error) {
	names, kinds, required := pqWanted(m, noWeights)
	var idx []int
	var p []string
	for i, n := range names {
		fi := sc.FieldIndices(n)
		switch {
		case len(fi) == 0 && required[i]:
			p = append(p, fmt.Sprintf("column %s missing", n))
		case len(fi) == 0:
		case len(fi) > 1:
			p = append(p, fmt.Sprintf("column %s appears %d times", n, len(fi)))
		case !pqKindOK(sc.Field(fi[0]).Type, kinds[i]):
			p = append(p, fmt.Sprintf("column %s has type %s, want %s", n, sc.Field(fi[0]).Type, kinds[i]))
		default:
			idx = append(idx, fi[0])
		}
	}
	if len(p) > 0 {
		return nil, fmt.Errorf("not a lessim trace schema: %s", strings.Join(p, "; "))
	}
	return idx, nil
}

func pqKindOK(t arrow.DataType, k pqColKind) bool {
	switch k {
	case pqKindInt:
		return pqIsInt(t.ID())
	case pqKindFloat64:
		return t.ID() == arrow.FLOAT64
	}
	switch t.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST:
	default:
		return false
	}
	elem := t.(arrow.ListLikeType).Elem().ID()
	switch k {
	case pqKindInt32List:
		return elem == arrow.INT32
	case pqKindFloat32List:
		return elem == arrow.FLOAT32
	default:
		return elem == arrow.BOOL
	}
}

func pqIsInt(id arrow.Type) bool {
	switch id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return true
	}
	return false
}

// pqInt reads an integer column of any width as int64.
type pqInt struct {
	name string
	a    arrow.Array
	at   func(i int) int64
}

func (c *pqInt) bind(name string, a arrow.Array) error {
	c.name, c.a = name, a
	switch a := a.(type) {
	case *array.Int8:
		c.at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int16:
		c.at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int32:
		c.at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int64:
		c.at = func(i int) int64 { return a.Value(i) }
	case *array.Uint8:
		c.at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint16:
		c.at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint32:
		c.at = func(i int) int64 { return int64(a.Value(i)) }
	default:
		return fmt.Errorf("column %s has type %s, want an integer", name, a.DataType())
	}
	return nil
}

// get returns row i's value, which must be non-null and in [lo, hi].
func (c *pqInt) get(i int, lo, hi int64) (int64, error) {
	if c.a.IsNull(i) {
		return 0, fmt.Errorf("%s is null", c.name)
	}
	v := c.at(i)
	if v < lo || v > hi {
		return 0, fmt.Errorf("%s %d out of range [%d,%d]", c.name, v, lo, hi)
	}
	return v, nil
}

// pqList reads a list-like column. Exactly one of i32, f32, bools holds the
// element values, by element type; span indexes them.
type pqList struct {
	name  string
	list  array.ListLike // nil when the column is absent
	child arrow.Array
	i32   []int32
	f32   []float32
	bools *array.Boolean
}

func (c *pqList) bind(name string, a arrow.Array) error {
	*c = pqList{name: name}
	list, ok := a.(array.ListLike)
	if !ok {
		return fmt.Errorf("column %s has type %s, want a list", name, a.DataType())
	}
	c.list, c.child = list, list.ListValues()
	switch v := c.child.(type) {
	case *array.Int32:
		c.i32 = v.Int32Values()
	case *array.Float32:
		c.f32 = v.Float32Values()
	case *array.Boolean:
		c.bools = v
	default:
		return fmt.Errorf("column %s has elements of type %s", name, c.child.DataType())
	}
	return nil
}

// span returns row i's element range in child; ok is false for a null list.
func (c *pqList) span(i int) (s, e int, ok bool, err error) {
	if c.list.IsNull(i) {
		return 0, 0, false, nil
	}
	s64, e64 := c.list.ValueOffsets(i)
	if s64 < 0 || e64 < s64 || e64 > int64(c.child.Len()) {
		return 0, 0, false, fmt.Errorf("%s: corrupt list offsets [%d,%d) of %d values", c.name, s64, e64, c.child.Len())
	}
	s, e = int(s64), int(e64)
	if c.child.NullN() > 0 {
		off := c.child.Data().Offset()
		if bitutil.CountSetBits(c.child.NullBitmapBytes(), off+s, e-s) != e-s {
			j := s
			for c.child.IsValid(j) {
				j++
			}
			return 0, 0, false, fmt.Errorf("%s[%d] is null", c.name, j-s)
		}
	}
	return s, e, true, nil
}

// short reports whether the batch's list offsets run past the element
// values: arrow-go reads a null element of a column whose Parquet schema says
// its elements are required as a missing value (no validity bitmap, one
// value fewer), so every later element shifts (see pqFindNullElement).
func (c *pqList) short() bool {
	if c.list == nil || c.list.Len() == 0 {
		return false
	}
	_, end := c.list.ValueOffsets(c.list.Len() - 1)
	return end > int64(c.child.Len())
}

// levelsOK reports whether the batch was decoded from as many Parquet levels
// as its lists need (wantLevels). arrow-go builds list offsets from the
// levels, counting an entry below the element's definition level as an
// element when it continues a list but not when it starts one: a null first
// element (of a column whose Parquet schema says its elements are required,
// so the arrays carry no validity bitmap for them) is simply not there, the
// list one shorter, the batch's offsets and values still in agreement
// (short sees nothing). Only the level count shows it. NB: a list whose only
// element is null has the levels of an empty list; no reader can tell them
// apart.
func (c *pqList) levelsOK(n int) bool { return n == c.wantLevels() }

// wantLevels is the number of Parquet levels the batch's lists take: one per
// element, and one for each null or empty list.
func (c *pqList) wantLevels() int {
	n := 0
	for i := range c.list.Len() {
		if c.list.IsNull(i) {
			n++
			continue
		}
		s, e := c.list.ValueOffsets(i)
		n += max(int(e-s), 1)
	}
	return n
}

// pqBatch is one record batch's columns, bound in pqWanted order.
type pqBatch struct {
	seq, pos, phase, pass, layer, computeNS pqInt
	experts, weights                        pqList
	logits, ri                              pqList   // list nil when absent
	look                                    []pqList // lookahead_d, or lookahead_score_d when compact
	lookTop                                 []pqList // compact only
	lookSum                                 []*array.Float64
	hit                                     pqList // list nil when absent
}

// bind takes the columns of rec by name; rec holds the wanted columns that
// are present.
func (b *pqBatch) bind(rec arrow.RecordBatch, m *Meta, noWeights bool) error {
	col := func(n string) arrow.Array {
		if fi := rec.Schema().FieldIndices(n); len(fi) == 1 {
			return rec.Column(fi[0])
		}
		return nil
	}
	names, _, required := pqWanted(m, noWeights)
	for i, n := range names {
		if required[i] && col(n) == nil {
			return fmt.Errorf("column %s missing from record batch", n)
		}
	}
	errs := []error{
		b.seq.bind(colSeq, col(colSeq)),
		b.pos.bind(colPos, col(colPos)),
		b.phase.bind(colPhase, col(colPhase)),
		b.pass.bind(colPass, col(colPass)),
		b.layer.bind(colLayer, col(colLayer)),
		b.computeNS.bind(colComputeNS, col(colComputeNS)),
		b.experts.bind(colExperts, col(colExperts)),
	}
	b.weights, b.logits, b.ri, b.hit = pqList{}, pqList{}, pqList{}, pqList{}
	if !noWeights {
		errs = append(errs, b.weights.bind(colWeights, col(colWeights)))
	}
	if m.HasLogits {
		errs = append(errs, b.logits.bind(colLogits, col(colLogits)))
	}
	b.look, b.lookTop, b.lookSum = b.look[:0], b.lookTop[:0], b.lookSum[:0]
	for d := 1; d <= m.LookaheadDepth; d++ {
		var l pqList
		if m.LookaheadTop == 0 {
			errs = append(errs, l.bind(pqLookaheadName(d), col(pqLookaheadName(d))))
			b.look = append(b.look, l)
			continue
		}
		var t pqList
		errs = append(errs, l.bind(pqLookScoreName(d), col(pqLookScoreName(d))), t.bind(pqLookTopName(d), col(pqLookTopName(d))))
		sum, ok := col(pqLookSumName(d)).(*array.Float64)
		if !ok {
			errs = append(errs, fmt.Errorf("column %s is not float64", pqLookSumName(d)))
		}
		b.look, b.lookTop, b.lookSum = append(b.look, l), append(b.lookTop, t), append(b.lookSum, sum)
	}
	if m.HasRouterInputs {
		errs = append(errs, b.ri.bind(colRouterInput, col(colRouterInput)))
	}
	if a := col(colHit); a != nil {
		errs = append(errs, b.hit.bind(colHit, a))
	}
	return errors.Join(errs...)
}

// lists returns the batch's bound list columns.
func (b *pqBatch) lists() []*pqList {
	ls := []*pqList{&b.experts, &b.weights, &b.logits, &b.ri, &b.hit}
	for d := range b.look {
		ls = append(ls, &b.look[d])
	}
	for d := range b.lookTop {
		ls = append(ls, &b.lookTop[d])
	}
	return ls
}

// pqFloats copies row i of a float32 list column into buf and returns it:
// nil for a null list, non-nil (maybe empty) otherwise.
func pqFloats(c *pqList, i int, buf *[]float32) ([]float32, error) {
	if c.list == nil {
		return nil, nil
	}
	s, e, ok, err := c.span(i)
	if !ok || err != nil {
		return nil, err
	}
	if c.f32 == nil && e > s {
		return nil, fmt.Errorf("%s is not a float32 list", c.name)
	}
	if *buf == nil {
		*buf = make([]float32, 0, e-s)
	}
	*buf = append((*buf)[:0], c.f32[s:e]...)
	return *buf, nil
}

// readRow reads batch row r.idx, file row `row`, as MoE layer k of r.step,
// checking that it continues the token being assembled.
func (r *Reader) readRow(k int, row int64) error {
	b, i, s := &r.batch, r.idx, &r.step
	layers := int64(len(r.meta.Model.Layers))
	layer, err := b.layer.get(i, 0, layers-1)
	if err != nil {
		return err
	}
	seq, err := b.seq.get(i, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	pos, err := b.pos.get(i, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	phase, err := b.phase.get(i, int64(Prefill), int64(Draft))
	if err != nil {
		return err
	}
	pass, err := b.pass.get(i, -1, math.MaxInt32)
	if err != nil {
		return err
	}
	if k == 0 {
		if layer != 0 {
			return fmt.Errorf("token (seq %d, pos %d) starts at layer %d, want 0 (rows must be sorted by token then layer)", seq, pos, layer)
		}
		s.Seq, s.Pos, s.Phase, s.Pass = int32(seq), int32(pos), Phase(phase), int32(pass)
	} else {
		switch {
		case int32(seq) != s.Seq || int32(pos) != s.Pos:
			return fmt.Errorf("token (seq %d, pos %d) has %d layers, want %d (next row is seq %d, pos %d)", s.Seq, s.Pos, k, layers, seq, pos)
		case layer != int64(k):
			return fmt.Errorf("layer %d after layer %d (rows must be sorted by token then layer)", layer, k-1)
		case Phase(phase) != s.Phase:
			return fmt.Errorf("phase %d differs from phase %d of the token's layer 0", phase, s.Phase)
		case int32(pass) != s.Pass:
			return fmt.Errorf("pass %d differs from pass %d of the token's layer 0", pass, s.Pass)
		}
	}
	ls, buf := &s.Layers[k], &r.bufs[k]
	if ls.ComputeNS, err = b.computeNS.get(i, 0, math.MaxInt64); err != nil {
		return err
	}
	es, ee, ok, err := b.experts.span(i)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("experts is null")
	}
	if b.experts.i32 == nil && ee > es {
		return fmt.Errorf("experts is not an int32 list")
	}
	buf.experts = append(buf.experts[:0], b.experts.i32[es:ee]...)
	ls.Experts = buf.experts
	if ee == es {
		ls.Experts = nil // a layer the pass did not route: nil, as importers make it
	}
	if ls.Weights, err = pqFloats(&b.weights, i, &buf.weights); err != nil {
		return err
	}
	if ls.Logits, err = pqFloats(&b.logits, i, &buf.logits); err != nil {
		return err
	}
	if ls.RouterInput, err = pqFloats(&b.ri, i, &buf.ri); err != nil {
		return err
	}
	if r.read.LookaheadTop > 0 {
		return r.readCompact(ls, buf, i)
	}
	// Lookahead keeps depths up to the last present one; absent depths are nil.
	n := 0
	for d := range b.look {
		sc, err := pqFloats(&b.look[d], i, &buf.look[d])
		if err != nil {
			return err
		}
		buf.lookHdr[d] = sc
		if sc != nil {
			n = d + 1
		}
	}
	ls.Lookahead = nil
	if n > 0 {
		ls.Lookahead = buf.lookHdr[:n]
	}
	return r.readHit(ls, buf, i)
}

// readHit reads row i's residency flags into ls.
func (r *Reader) readHit(ls *LayerStep, buf *pqLayerBuf, i int) error {
	b := &r.batch
	ls.Hit = nil
	if b.hit.list != nil {
		hs, he, ok, err := b.hit.span(i)
		if err != nil {
			return err
		}
		if ok {
			if b.hit.bools == nil && he > hs {
				return fmt.Errorf("hit is not a bool list")
			}
			if buf.hit == nil {
				buf.hit = make([]bool, 0, he-hs)
			}
			buf.hit = buf.hit[:0]
			for j := hs; j < he; j++ {
				buf.hit = append(buf.hit, b.hit.bools.Value(j))
			}
			ls.Hit = buf.hit
		}
	}
	return nil
}

// readCompact reads row i's compact lookahead (Meta.LookaheadTop) into
// ls.LookaheadIndex, checking it; ls.Lookahead is set after the step's check
// (Reader.readStep), as empty vectors, one per present depth.
func (r *Reader) readCompact(ls *LayerStep, buf *pqLayerBuf, i int) error {
	b := &r.batch
	top, experts := r.read.LookaheadTop, int32(r.meta.Model.Experts)
	n := 0
	buf.index, buf.present = buf.index[:0], buf.present[:0]
	for d := range b.look {
		sc, err := pqFloats(&b.look[d], i, &buf.look[d])
		if err != nil {
			return err
		}
		s, e, ok, err := b.lookTop[d].span(i)
		if err != nil {
			return err
		}
		if ok != (sc != nil) || ok != !b.lookSum[d].IsNull(i) {
			return fmt.Errorf("depth-%d compact lookahead: candidates, scores and sum must all be null or all be present", d+1)
		}
		buf.present = append(buf.present, ok)
		if !ok {
			buf.index = append(buf.index, CandidateIndex{})
			continue
		}
		if b.lookTop[d].i32 == nil && e > s {
			return fmt.Errorf("%s is not an int32 list", b.lookTop[d].name)
		}
		ids := b.lookTop[d].i32[s:e]
		switch {
		case len(ids) != len(sc):
			return fmt.Errorf("depth-%d compact lookahead: %d candidates but %d scores", d+1, len(ids), len(sc))
		case len(ids) > top:
			return fmt.Errorf("depth-%d compact lookahead: %d candidates, lookahead_top is %d", d+1, len(ids), top)
		}
		for _, x := range ids {
			if x < 0 || x >= experts {
				return fmt.Errorf("depth-%d compact lookahead: candidate expert %d out of range [0,%d)", d+1, x, experts)
			}
		}
		sum := b.lookSum[d].Value(i)
		if !(sum >= 0) || math.IsInf(sum, 0) {
			return fmt.Errorf("depth-%d compact lookahead: softmax sum %v is not a finite non-negative number", d+1, sum)
		}
		if len(buf.tops) <= d {
			buf.tops = append(buf.tops, nil)
		}
		buf.tops[d] = append(buf.tops[d][:0], ids...)
		buf.index = append(buf.index, CandidateIndex{
			Top: buf.tops[d], Score: sc, Complete: len(ids) < top,
			ExpSum: sum, HasSum: len(ids) > 0,
		})
		n = d + 1
	}
	ls.Lookahead, ls.LookaheadIndex = nil, nil
	if n > 0 {
		ls.LookaheadIndex = buf.index[:n]
	}
	return r.readHit(ls, buf, i)
}
