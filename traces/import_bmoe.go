package traces

// Importer for BigMoeOnEdge route traces (`--format bmoe-route-csv`).
//
// The BigMoeOnEdge engine (github.com/Helldez/BigMoeOnEdge, Apache-2.0), a
// llama.cpp-based runtime that streams experts from flash into a global LRU
// expert cache, writes one CSV row per routed slot. Its published traces are
// in docs/bench-data/2026-07-15-route-trace/. The format, `# route_trace v1`:
//
//	# route_trace v1
//	# model=PATH arch=ARCH n_layer=L n_expert=E n_expert_used=K
//	# layer=0 expert_bytes=B dense_bytes=D        (one line per MoE layer, in order)
//	turn,phase,step,layer,slot,expert,weight,residency,expert_bytes
//	0,0,0,0,0,49,0.221297,0,3059712
//
// phase 0 is prefill (one batched pass over the prompt), 1 is decode (one pass
// per token); step is the token index within the turn; slot the rank in the
// top-k; weight the normalized gate weight; residency 1 when the expert was in
// the engine's cache when the batch (one layer of one pass) began; expert_bytes
// the bytes read for the slot (0 on a hit or a repeat within the batch).
//
// Mapping: one Step per (turn, step) with Seq = turn, Pos = step; prefill
// tokens of a turn share one Pass, each decode token has its own; Experts,
// Weights and Hit come from the slots in rank order. Only a prefill token's
// last layer may be absent from the file, and stays empty (llama.cpp keeps
// only the output row in the last layer of a prefill); a decode token missing
// any layer, a prefill token missing another, or a turn whose steps skip a
// number is an error at the line where the rows would be (a file cut at a
// line boundary shows as its last token missing layers). The ModelSpec comes from the preamble: one ExpertTensor
// per layer named "expert" with the layer's bytes and no quant type (the CSV
// does not give the gate/up/down split), TopK = n_expert_used (the run's
// top-k, which may differ from the model's default).
//
// Input forms: the file may be gzip-compressed (recognised by its magic bytes
// 1f 8b, whatever its name) and may begin with a UTF-8 byte-order mark
// (skipped). A last line that ends without a newline and is not a complete
// row (or leaves its token's slots incomplete) is reported as a truncated
// file at that line, as is a gzip stream that ends early.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/textin"
)

// bmoeHeader is the CSV header line of a route trace.
const bmoeHeader = "turn,phase,step,layer,slot,expert,weight,residency,expert_bytes"

// bmoeMaxErrors caps the number of row errors ImportBMoE reports at once.
const bmoeMaxErrors = 10

// ImportBMoE reads a BigMoeOnEdge route trace (see the comment at the top of
// import_bmoe.go), plain or gzip-compressed. Errors are positioned and name
// the file by path as given: "dir/file.csv:LINE: reason". The metadata's
// provenance (Info "file", the model's Source) names its base name.
func ImportBMoE(path string) (Meta, []Step, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, nil, err
	}
	defer f.Close()
	return parseBMoE(f, path)
}

// bmoePreamble is the model description from the comment lines.
type bmoePreamble struct {
	model, arch               string
	nLayer, nExpert, nUsed    int
	expertBytes, denseBytes   []int64
	seenLayer                 []bool
	haveModelLine, haveHeader bool
}

// bmoeTokenKey names one token of the trace.
type bmoeTokenKey struct{ turn, step int64 }

// bmoeGroupKey names one token at one layer.
type bmoeGroupKey struct {
	turn, step int64
	layer      int
}

// bmoeParser holds the reader's state.
type bmoeParser struct {
	name  string // the file as errors name it
	base  string // its base name, for the trace's provenance
	line  int
	errs  []error
	pre   bmoePreamble
	steps []Step
	index map[bmoeTokenKey]int
	seen  map[bmoeGroupKey]bool
	// first[i][l] is the line of token i's first row at layer l (0: none);
	// last[i] the line of its last row. Tokens are in file order, as steps.
	first [][]int
	last  []int
	cur   bmoeGroupKey // group being filled
	curN  int          // slots of cur so far (0: no group open)
	curAt int          // line where cur began
	rows  int
	// noNewline is set when the scanner hands out a last line that has no
	// newline; cut while an error on that line means the file was truncated.
	noNewline, cut bool
}

// errorf records a positioned error; it reports whether the cap was reached.
func (p *bmoeParser) errorf(format string, a ...any) bool {
	msg := fmt.Sprintf(format, a...)
	if p.cut {
		msg = "truncated file: the last line ends without a newline and is incomplete (" + msg + ")"
	}
	return p.errorAt(p.line, "%s", msg)
}

// errorAt records an error at line; it reports whether the cap was reached.
func (p *bmoeParser) errorAt(line int, format string, a ...any) bool {
	p.errs = append(p.errs, fmt.Errorf("%s:%d: %s", p.name, line, fmt.Sprintf(format, a...)))
	return len(p.errs) >= bmoeMaxErrors
}

// splitLines is bufio.ScanLines that notes a last line without a newline.
func (p *bmoeParser) splitLines(data []byte, atEOF bool) (int, []byte, error) {
	adv, tok, err := bufio.ScanLines(data, atEOF)
	if atEOF && adv > 0 && adv == len(data) && data[adv-1] != '\n' {
		p.noNewline = true
	}
	return adv, tok, err
}

func parseBMoE(r io.Reader, name string) (Meta, []Step, error) {
	p := &bmoeParser{name: name, base: filepath.Base(name), index: map[bmoeTokenKey]int{}, seen: map[bmoeGroupKey]bool{}}
	in, done, err := textin.Reader(r)
	if err != nil {
		return Meta{}, nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	defer done()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Split(p.splitLines)
	for sc.Scan() {
		p.line++
		p.cut = p.noNewline
		text := strings.TrimRight(sc.Text(), "\r")
		if p.line == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // UTF-8 byte-order mark
			if strings.TrimSpace(text) != "# route_trace v1" {
				p.errorf("not a route trace: first line must be %q", "# route_trace v1")
				return Meta{}, nil, errors.Join(p.errs...)
			}
			continue
		}
		if !p.pre.haveHeader {
			if strings.HasPrefix(text, "#") {
				p.preambleLine(text)
				continue
			}
			if strings.TrimSpace(text) != bmoeHeader {
				p.errorf("bad header %q, want %q", text, bmoeHeader)
				return Meta{}, nil, errors.Join(p.errs...)
			}
			p.pre.haveHeader = true
			p.checkPreamble()
			if len(p.errs) > 0 {
				return Meta{}, nil, errors.Join(p.errs...)
			}
			continue
		}
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if p.row(text) {
			break
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Meta{}, nil, fmt.Errorf("%s:%d: truncated file: the gzip stream ends early (%w)", name, p.line+1, err)
		}
		return Meta{}, nil, fmt.Errorf("%s:%d: %w", name, p.line+1, err)
	}
	if len(p.errs) < bmoeMaxErrors {
		switch {
		case p.line == 0:
			p.errorf("empty file")
		case !p.pre.haveHeader:
			p.errorf("no CSV header %q", bmoeHeader)
		case p.rows == 0:
			p.errorf("no rows")
		default:
			p.closeGroup()
			if len(p.errs) == 0 { // rows refused above would show as missing
				p.checkTokens()
			}
		}
	}
	if len(p.errs) > 0 {
		return Meta{}, nil, errors.Join(p.errs...)
	}
	return p.finish()
}

// preambleLine parses a "# key=value ..." line.
func (p *bmoeParser) preambleLine(text string) {
	fields := strings.Fields(strings.TrimPrefix(text, "#"))
	kv := map[string]string{}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	atoi := func(key string) (int64, bool) {
		v, err := strconv.ParseInt(kv[key], 10, 64)
		if err != nil {
			p.errorf("%s=%q is not an integer", key, kv[key])
			return 0, false
		}
		return v, true
	}
	switch {
	case kv["layer"] != "":
		if p.pre.nLayer == 0 {
			p.errorf("layer line before the n_layer line")
			return
		}
		l, ok1 := atoi("layer")
		eb, ok2 := atoi("expert_bytes")
		db, ok3 := atoi("dense_bytes")
		if !ok1 || !ok2 || !ok3 {
			return
		}
		switch {
		case l < 0 || l >= int64(p.pre.nLayer):
			p.errorf("layer %d out of range [0, n_layer=%d)", l, p.pre.nLayer)
		case p.pre.seenLayer[l]:
			p.errorf("layer %d described twice", l)
		case eb <= 0:
			p.errorf("layer %d: expert_bytes %d must be > 0", l, eb)
		case db < 0:
			p.errorf("layer %d: dense_bytes %d must be ≥ 0", l, db)
		default:
			p.pre.seenLayer[l] = true
			p.pre.expertBytes[l], p.pre.denseBytes[l] = eb, db
		}
	case kv["n_layer"] != "":
		if p.pre.haveModelLine {
			p.errorf("second model line")
			return
		}
		p.pre.haveModelLine = true
		p.pre.model, p.pre.arch = kv["model"], kv["arch"]
		nl, ok1 := atoi("n_layer")
		ne, ok2 := atoi("n_expert")
		nu, ok3 := atoi("n_expert_used")
		if !ok1 || !ok2 || !ok3 {
			return
		}
		if nl < 1 || nl > 4096 {
			p.errorf("n_layer %d must be in [1, 4096]", nl)
			nl = 0
		}
		if ne < 1 || ne > 1<<16 {
			p.errorf("n_expert %d must be in [1, 65536]", ne)
		}
		if nu < 1 || nu > ne {
			p.errorf("n_expert_used %d must be in [1, n_expert=%d]", nu, ne)
		}
		p.pre.nLayer, p.pre.nExpert, p.pre.nUsed = int(nl), int(ne), int(nu)
		p.pre.expertBytes = make([]int64, nl)
		p.pre.denseBytes = make([]int64, nl)
		p.pre.seenLayer = make([]bool, nl)
	}
}

// checkPreamble reports every missing piece of the preamble at the header line.
func (p *bmoeParser) checkPreamble() {
	if !p.pre.haveModelLine {
		p.errorf("preamble has no model line with n_layer, n_expert, n_expert_used")
		return
	}
	var missing []string
	for l, ok := range p.pre.seenLayer {
		if !ok {
			missing = append(missing, strconv.Itoa(l))
		}
	}
	if len(missing) > 0 {
		p.errorf("preamble lacks expert_bytes/dense_bytes for layer(s) %s", strings.Join(missing, ", "))
	}
}

// row parses and applies one CSV row; it reports whether to stop (error cap).
func (p *bmoeParser) row(text string) bool {
	f := strings.Split(text, ",")
	if len(f) != 9 {
		return p.errorf("%d fields, want 9 (%s)", len(f), bmoeHeader)
	}
	names := strings.Split(bmoeHeader, ",")
	var v [9]int64
	for i, s := range f {
		if i == 6 {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return p.errorf("%s %q is not an integer", names[i], s)
		}
		v[i] = n
	}
	w, err := strconv.ParseFloat(strings.TrimSpace(f[6]), 64)
	if err != nil || math.IsNaN(w) || w < 0 || w > 1.0001 {
		return p.errorf("weight %q is not a number in [0, 1]", f[6])
	}
	turn, phase, step, layer, slot, expert, res, bytes := v[0], v[1], v[2], v[3], v[4], v[5], v[7], v[8]
	pre := &p.pre
	switch {
	case turn < 0 || turn > math.MaxInt32:
		return p.errorf("turn %d out of range", turn)
	case phase != 0 && phase != 1:
		return p.errorf("phase %d must be 0 (prefill) or 1 (decode)", phase)
	case step < 0 || step > math.MaxInt32:
		return p.errorf("step %d out of range", step)
	case layer < 0 || layer >= int64(pre.nLayer):
		return p.errorf("layer %d out of range [0, n_layer=%d)", layer, pre.nLayer)
	case slot < 0 || slot >= int64(pre.nUsed):
		return p.errorf("slot %d out of range [0, n_expert_used=%d)", slot, pre.nUsed)
	case expert < 0 || expert >= int64(pre.nExpert):
		return p.errorf("expert %d out of range [0, n_expert=%d)", expert, pre.nExpert)
	case res != 0 && res != 1:
		return p.errorf("residency %d must be 0 or 1", res)
	case bytes != 0 && bytes != pre.expertBytes[layer]:
		return p.errorf("expert_bytes %d must be 0 or layer %d's expert_bytes %d", bytes, layer, pre.expertBytes[layer])
	case res == 1 && bytes != 0:
		return p.errorf("expert_bytes %d on a hit (residency 1), want 0", bytes)
	}
	g := bmoeGroupKey{turn, step, int(layer)}
	if p.curN > 0 && g == p.cur {
		if int(slot) != p.curN {
			return p.errorf("slot %d out of order: want slot %d of turn %d step %d layer %d", slot, p.curN, turn, step, layer)
		}
	} else {
		if p.closeGroup() {
			return true
		}
		if p.seen[g] {
			return p.errorf("duplicate: turn %d step %d layer %d appeared before", turn, step, layer)
		}
		if slot != 0 {
			return p.errorf("slot %d out of order: turn %d step %d layer %d starts at slot 0", slot, turn, step, layer)
		}
		p.seen[g] = true
		p.cur, p.curN, p.curAt = g, 0, p.line
	}
	tk := bmoeTokenKey{turn, step}
	i, ok := p.index[tk]
	if !ok {
		i = len(p.steps)
		p.index[tk] = i
		p.steps = append(p.steps, Step{Seq: int32(turn), Pos: int32(step), Phase: Phase(phase), Layers: make([]LayerStep, pre.nLayer)})
		p.first, p.last = append(p.first, make([]int, pre.nLayer)), append(p.last, 0)
	} else if p.steps[i].Phase != Phase(phase) {
		return p.errorf("phase %d for turn %d step %d, earlier rows say %d", phase, turn, step, p.steps[i].Phase)
	}
	ls := &p.steps[i].Layers[layer]
	if j := slices.Index(ls.Experts, int32(expert)); j >= 0 {
		return p.errorf("duplicate: expert %d of turn %d step %d layer %d already in slot %d", expert, turn, step, layer, j)
	}
	if ls.Experts == nil {
		ls.Experts = make([]int32, 0, pre.nUsed)
		ls.Weights = make([]float32, 0, pre.nUsed)
		ls.Hit = make([]bool, 0, pre.nUsed)
	}
	if p.first[i][layer] == 0 {
		p.first[i][layer] = p.line
	}
	p.last[i] = p.line
	ls.Experts = append(ls.Experts, int32(expert))
	ls.Weights = append(ls.Weights, float32(w))
	ls.Hit = append(ls.Hit, res == 1)
	p.curN++
	p.rows++
	return false
}

// closeGroup checks that the open group has all its slots.
func (p *bmoeParser) closeGroup() bool {
	if p.curN == 0 || p.curN == p.pre.nUsed {
		p.curN = 0
		return false
	}
	c := p.cur
	n := p.curN
	p.curN = 0
	return p.errorf("turn %d step %d layer %d (from line %d) has %d of n_expert_used=%d slots", c.turn, c.step, c.layer, p.curAt, n, p.pre.nUsed)
}

// checkTokens reports rows the file lacks once every row is read: a token
// must route every MoE layer (a prefill token may lack only the last one,
// which llama.cpp computes for the output row alone), and the steps of a turn
// follow each other without a gap. Each error is at the line where the
// missing rows would be.
func (p *bmoeParser) checkTokens() {
	for i := range p.steps {
		if p.checkLayers(i) {
			return
		}
	}
	order := make([]int, len(p.steps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		sa, sb := &p.steps[a], &p.steps[b]
		if sa.Seq != sb.Seq {
			return int(sa.Seq) - int(sb.Seq)
		}
		return int(sa.Pos) - int(sb.Pos)
	})
	for k := 1; k < len(order); k++ {
		prev, cur := &p.steps[order[k-1]], &p.steps[order[k]]
		if cur.Seq == prev.Seq && cur.Pos > prev.Pos+1 &&
			p.errorAt(p.first[order[k]][0], "turn %d %s missing: no rows between step %d and step %d", cur.Seq, bmoeSpan("step", int(prev.Pos)+1, int(cur.Pos)-1), prev.Pos, cur.Pos) {
			return
		}
	}
}

// checkLayers reports the layers token i lacks; it reports whether the error
// cap was reached.
func (p *bmoeParser) checkLayers(i int) bool {
	st, first := &p.steps[i], p.first[i]
	need := len(first)
	if st.Phase == Prefill {
		need--
	}
	for l := 0; l < need; l++ {
		if first[l] != 0 {
			continue
		}
		end := l
		for end+1 < need && first[end+1] == 0 {
			end++
		}
		line, hint := p.last[i]+1, ""
		if j := slices.IndexFunc(first[end+1:], func(n int) bool { return n != 0 }); j >= 0 {
			line = first[end+1+j]
		} else if p.last[i] == p.lastRowLine() {
			hint = " (its rows end the file: was the file cut short?)"
		}
		if p.errorAt(line, "turn %d step %d has no rows for %s%s", st.Seq, st.Pos, bmoeSpan("layer", l, end), hint) {
			return true
		}
		l = end
	}
	return false
}

// lastRowLine is the line of the file's last row.
func (p *bmoeParser) lastRowLine() int { return slices.Max(p.last) }

// bmoeSpan names one item or a range: "layer 10", "layers 20-47".
func bmoeSpan(noun string, from, to int) string {
	if from == to {
		return fmt.Sprintf("%s %d", noun, from)
	}
	return fmt.Sprintf("%ss %d-%d", noun, from, to)
}

// bmoeVariant finds a quant suffix such as "Q4_K_M" at the end of a model file name.
var bmoeVariant = regexp.MustCompile(`(?i)[-_.]((?:i?q\d[a-z0-9_]*)|bf16|f16|f32)$`)

// finish orders the steps, numbers the passes and builds Meta.
func (p *bmoeParser) finish() (Meta, []Step, error) {
	steps := p.steps
	slices.SortStableFunc(steps, func(a, b Step) int {
		if a.Seq != b.Seq {
			return int(a.Seq) - int(b.Seq)
		}
		return int(a.Pos) - int(b.Pos)
	})
	pass := int32(-1)
	missing := 0
	for i := range steps {
		st := &steps[i]
		samePrefill := i > 0 && st.Phase == Prefill && steps[i-1].Phase == Prefill && steps[i-1].Seq == st.Seq
		if !samePrefill {
			pass++
		}
		st.Pass = pass
		for l := range st.Layers {
			if len(st.Layers[l].Experts) == 0 {
				missing++
			}
		}
	}
	pre := &p.pre
	base := filepath.Base(pre.model)
	modelName := strings.TrimSuffix(base, filepath.Ext(base))
	if modelName == "" || modelName == "." {
		modelName = strings.TrimSuffix(p.base, filepath.Ext(p.base))
	}
	variant := ""
	if m := bmoeVariant.FindStringSubmatch(modelName); m != nil {
		variant = strings.ToLower(m[1])
	}
	spec := devices.ModelSpec{
		Name:    modelName,
		Arch:    pre.arch,
		Variant: variant,
		Blocks:  pre.nLayer,
		Experts: pre.nExpert,
		TopK:    pre.nUsed,
		Source:  fmt.Sprintf("route_trace v1 preamble of %s (hidden size, FFN sizes and FLOPs not recorded)", p.base),
	}
	for l := range pre.nLayer {
		spec.Layers = append(spec.Layers, devices.LayerSpec{
			Block:       l,
			ExpertBytes: pre.expertBytes[l],
			Tensors:     []devices.ExpertTensor{{Name: "expert", Bytes: pre.expertBytes[l]}},
			DenseBytes:  pre.denseBytes[l],
		})
		spec.NonExpertBytes += pre.denseBytes[l]
	}
	meta := Meta{
		Model:  spec,
		Origin: "import:bmoe-route-csv",
		Info: map[string]string{
			"file":        p.base,
			"format":      "route_trace v1 (bmoe-route-csv)",
			"attribution": "BigMoeOnEdge engine route trace, github.com/Helldez/BigMoeOnEdge, docs/bench-data/2026-07-15-route-trace/, Apache-2.0",
			"model_path":  pre.model,
			"arch":        pre.arch,
			"top_k":       fmt.Sprintf("n_expert_used=%d: the run's top-k, which may differ from the model's default", pre.nUsed),
			"run_settings": "not recorded in the file; the published 2026-07-15 traces ran on a OnePlus 15R (UFS 4) with " +
				"--cache-mb 4000 --overlap --io-threads 4 --n-expert-used 6, 4 CPU threads, 128 decoded tokens",
			"cache_rules":        "global LRU over (layer, expert) in bytes; a batch is one layer of one pass; residency = resident when the batch began",
			"rows":               strconv.Itoa(p.rows),
			"empty_token_layers": strconv.Itoa(missing),
			"non_expert_bytes":   "sum of the preamble's dense_bytes (embeddings and output head not included)",
		},
	}
	return meta, steps, nil
}
