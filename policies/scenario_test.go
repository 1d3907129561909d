package policies

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

var rewrite = flag.Bool("rewrite", false, "regenerate the expected blocks of testdata/scenarios/*.txt")

// A scenario file holds cases. Each case is a few directive lines, a "----"
// line, and the expected output up to the next blank line:
//
//	# what the case shows
//	model experts=4 topk=1 bytes=100,100    # one byte size per MoE layer
//	run policy=lru cache=200 [depth=1 topn=2 threshold=0.8 maxcand=4
//	    maxinflight=200 pin=0.5 prefetch=false spec=2 accept=1]
//	step 0 | 1,2                            # experts per layer, '|' between layers
//	step 0 | 1 ; ahead 1 | -                # lookahead from layer 0 names layer 1's candidates
//	----
//	pass 0 (step 0): L0 0:miss | L1 1:miss
//	uses=2 hits=0 inflight=0 misses=2 prefetch-loads=0 wasted-bytes=0
//
// Lookahead "ahead a,b" gives the listed experts scores 10, 9, ... and the
// others 0, per layer; "a,b/c" adds depth 2 (c for the layer after next). The run goes through sim.RunTap on a test device with
// the per-expert layout and cached-first compute; output lists every use's
// classification (hit, inflight, miss) per pass, then the totals.
type scenario struct {
	file      string
	line      int // of the "run" directive
	model     *devices.ModelSpec
	policy    string
	params    Params
	cache     int64
	spec      int
	accept    float64
	steps     []traces.Step
	wantStart int // index of the first expected line in the file's lines
	wantEnd   int // index after the last expected line
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			cases, err := parseScenarios(f, lines)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			last := 0
			for _, sc := range cases {
				got, err := sc.run()
				if err != nil {
					t.Fatalf("%s:%d: %v", sc.file, sc.line, err)
				}
				want := lines[sc.wantStart:sc.wantEnd]
				if *rewrite {
					out = append(out, lines[last:sc.wantStart]...)
					out = append(out, got...)
					last = sc.wantEnd
					continue
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", sc.file, sc.line, sc.policy,
						strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
			if *rewrite {
				out = append(out, lines[last:]...)
				if err := os.WriteFile(f, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// parseScenarios reads every case of a file; errors say file:line: reason.
func parseScenarios(file string, lines []string) ([]*scenario, error) {
	var cases []*scenario
	var model *devices.ModelSpec
	var cur *scenario
	for i := 0; i < len(lines); i++ {
		text, _, _ := strings.Cut(lines[i], "#")
		text = strings.TrimSpace(text)
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", file, i+1, fmt.Sprintf(format, a...))
		}
		if text == "" {
			continue
		}
		word, rest, _ := strings.Cut(text, " ")
		switch word {
		case "model":
			m, err := parseModel(rest)
			if err != nil {
				return nil, fail("%v", err)
			}
			model = m
		case "run":
			if model == nil {
				return nil, fail("run before any model line")
			}
			sc := &scenario{file: file, line: i + 1, model: model, spec: 1}
			if err := sc.parseRun(rest); err != nil {
				return nil, fail("%v", err)
			}
			cur = sc
		case "step":
			if cur == nil {
				return nil, fail("step before any run line")
			}
			st, err := parseStep(rest, cur.model, len(cur.steps))
			if err != nil {
				return nil, fail("%v", err)
			}
			cur.steps = append(cur.steps, st)
		case "----":
			if cur == nil || len(cur.steps) == 0 {
				return nil, fail("---- without a run and steps before it")
			}
			cur.wantStart = i + 1
			j := i + 1
			for j < len(lines) && strings.TrimSpace(lines[j]) != "" {
				j++
			}
			cur.wantEnd = j
			cases = append(cases, cur)
			cur, i = nil, j
		default:
			return nil, fail("unknown directive %q (valid: model, run, step, ----)", word)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: run without a ---- block", file, cur.line)
	}
	return cases, nil
}

func parseModel(s string) (*devices.ModelSpec, error) {
	var experts, topK int
	var sizes []int64
	for _, kv := range strings.Fields(s) {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "experts":
			experts, err = strconv.Atoi(v)
		case "topk":
			topK, err = strconv.Atoi(v)
		case "bytes":
			for _, b := range strings.Split(v, ",") {
				var n int64
				n, err = strconv.ParseInt(b, 10, 64)
				sizes = append(sizes, n)
			}
		default:
			return nil, fmt.Errorf("unknown model key %q (valid: bytes, experts, topk)", k)
		}
		if err != nil {
			return nil, fmt.Errorf("model %s: %v", k, err)
		}
	}
	if experts <= 0 || topK <= 0 || len(sizes) == 0 {
		return nil, fmt.Errorf("model needs experts, topk and bytes")
	}
	if experts > 1024 || len(sizes) > 64 {
		return nil, fmt.Errorf("scenario models are tiny: at most 1024 experts and 64 layers")
	}
	return simModel(testModel(experts, topK, sizes...)), nil
}

func (sc *scenario) parseRun(s string) error {
	p := Params{Model: sc.model}
	for _, kv := range strings.Fields(s) {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "policy":
			sc.policy = v
		case "cache":
			sc.cache, err = strconv.ParseInt(v, 10, 64)
		case "depth":
			p.Depth, err = strconv.Atoi(v)
			p.Prefetch = true
		case "topn":
			p.TopN, err = strconv.Atoi(v)
		case "threshold":
			p.Threshold, err = strconv.ParseFloat(v, 64)
		case "maxcand":
			p.MaxCandidates, err = strconv.Atoi(v)
		case "maxinflight":
			p.MaxInflightBytes, err = strconv.ParseInt(v, 10, 64)
		case "pin":
			p.PinFraction, err = strconv.ParseFloat(v, 64)
		case "prefetch":
			p.Prefetch, err = strconv.ParseBool(v)
		case "spec":
			sc.spec, err = strconv.Atoi(v)
		case "accept":
			sc.accept, err = strconv.ParseFloat(v, 64)
		default:
			return fmt.Errorf("unknown run key %q (valid: accept, cache, depth, maxcand, maxinflight, pin, policy, prefetch, spec, threshold, topn)", k)
		}
		if err != nil {
			return fmt.Errorf("run %s: %v", k, err)
		}
	}
	if sc.policy == "" || sc.cache <= 0 {
		return fmt.Errorf("run needs policy and cache")
	}
	sc.params = p
	return nil
}

// parseStep reads "e,e | e,e [; ahead e,e | -]".
func parseStep(s string, m *devices.ModelSpec, idx int) (traces.Step, error) {
	st := traces.Step{Pos: int32(idx), Phase: traces.Decode, Pass: int32(idx)}
	sel, ahead, hasAhead := strings.Cut(s, ";")
	layers := strings.Split(sel, "|")
	if len(layers) != len(m.Layers) {
		return st, fmt.Errorf("step has %d layers, model has %d", len(layers), len(m.Layers))
	}
	list := func(s string) ([]int32, error) {
		s = strings.TrimSpace(s)
		if s == "-" || s == "" {
			return nil, nil
		}
		var out []int32
		for _, f := range strings.Split(s, ",") {
			e, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || e < 0 || e >= m.Experts {
				return nil, fmt.Errorf("bad expert %q (want 0..%d)", f, m.Experts-1)
			}
			out = append(out, int32(e))
		}
		return out, nil
	}
	for _, l := range layers {
		es, err := list(l)
		if err != nil {
			return st, err
		}
		st.Layers = append(st.Layers, traces.LayerStep{Experts: es})
	}
	if hasAhead {
		a, ok := strings.CutPrefix(strings.TrimSpace(ahead), "ahead ")
		if !ok {
			return st, fmt.Errorf("after ';' expected 'ahead ...'")
		}
		parts := strings.Split(a, "|")
		if len(parts) != len(m.Layers) {
			return st, fmt.Errorf("ahead has %d layers, model has %d", len(parts), len(m.Layers))
		}
		for l, part := range parts {
			for _, depth := range strings.Split(part, "/") {
				es, err := list(depth)
				if err != nil {
					return st, err
				}
				if es == nil {
					continue
				}
				sc := make([]float32, m.Experts)
				for i, e := range es {
					sc[e] = float32(10 - i)
				}
				st.Layers[l].Lookahead = append(st.Layers[l].Lookahead, sc)
			}
		}
	}
	return st, nil
}

// run simulates the case and formats what happened.
func (sc *scenario) run() ([]string, error) {
	cfg := simConfig(sc.model, sc.cache)
	cfg.SpecBlock, cfg.SpecAccept = sc.spec, sc.accept
	p := sc.params
	p.Trace = sc.steps
	pol, err := New(sc.policy, p)
	if err != nil {
		return nil, err
	}
	var out []string
	var line strings.Builder
	pass, layer := int64(-1), -1
	flush := func() {
		if line.Len() > 0 {
			out = append(out, line.String())
			line.Reset()
		}
	}
	res, err := sim.RunTap(cfg, sc.steps, pol, func(u sim.UseRecord) {
		if u.Pass != pass {
			flush()
			pass, layer = u.Pass, -1
			fmt.Fprintf(&line, "pass %d (step %d):", u.Pass, u.Step)
		}
		if u.Layer != layer {
			if layer >= 0 {
				line.WriteString(" |")
			}
			layer = u.Layer
			fmt.Fprintf(&line, " L%d", u.Layer)
		}
		fmt.Fprintf(&line, " %d:%s", u.Expert, map[sim.Residency]string{sim.Resident: "hit", sim.Loading: "inflight", sim.Absent: "miss"}[u.State])
	})
	if err != nil {
		return nil, err
	}
	flush()
	out = append(out, fmt.Sprintf("uses=%d hits=%d inflight=%d misses=%d prefetch-loads=%d wasted-bytes=%d",
		res.Uses, res.Hits, res.InflightHits, res.Misses, res.PrefetchLoads, res.WastedPrefetchBytes))
	if sc.spec > 1 {
		out = append(out, fmt.Sprintf("tokens=%d passes=%d", res.Tokens, res.Passes))
	}
	return out, nil
}

// FuzzParseScenarios: the scenario reader never panics and reports errors
// with file:line positions. Seeded from the scenario files.
func FuzzParseScenarios(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(string(data))
		}
	}
	f.Add("model experts=2 topk=1 bytes=1\nrun policy=lru cache=1\nstep 0 ; ahead 1/0\n----\n")
	f.Fuzz(func(t *testing.T, text string) {
		cases, err := parseScenarios("fuzz.txt", strings.Split(text, "\n"))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.txt:") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		for _, sc := range cases {
			if sc.wantStart > sc.wantEnd || len(sc.steps) == 0 {
				t.Fatalf("bad case bounds %d..%d with %d steps", sc.wantStart, sc.wantEnd, len(sc.steps))
			}
		}
	})
}
