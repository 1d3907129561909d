package experiment

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

// resolveRun resolves and runs opts with in and returns the outcome as JSON
// and whether the run streamed.
func resolveRun(t *testing.T, in *Inputs, opts map[string]string) (string, bool) {
	t.Helper()
	s, err := FromOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	return resolveRunSpec(t, in, s, opts)
}

// resolveRunSpec is resolveRun for a spec; name names it in failures.
func resolveRunSpec(t *testing.T, in *Inputs, s Spec, name any) (string, bool) {
	t.Helper()
	p, err := in.Resolve(s)
	if err != nil {
		t.Fatalf("%v: %v", name, err)
	}
	o, err := p.Run()
	if err != nil {
		t.Fatalf("%v: %v", name, err)
	}
	b, err := json.Marshal(struct {
		Spec   Spec
		Hash   string
		Result any
	}{o.Spec, o.Hash, o.Result})
	if err != nil {
		t.Fatal(err)
	}
	return string(b), p.Streamed()
}

// TestStreamedRunsMatchLoaded: a run that streams its trace file gives the
// loaded run's resolved spec, hash and Result (warnings included) byte for
// byte, for every policy (oracle, belady and pinned-hot from the first
// pass's Future; les on full and on compact lookahead), with prefill,
// speculative blocks (the rejected drafts routed by the first pass's draft
// statistics), the acceptance estimated from the recorded passes, and passes
// from the trace, and cache auto sized by the longest sequence.
func TestStreamedRunsMatchLoaded(t *testing.T) {
	full := writeTrace(t, 30, 6, 2, pairPasses)
	compact := writeSynth(t, 16)
	cases := []map[string]string{
		{"policy": "lru"},
		{"policy": "lfu", "cache": "auto"},
		{"policy": "ondemand", "layout": "gguf-mmap"},
		{"policy": "pinned-hot"},
		{"policy": "oracle"},
		{"policy": "oracle", "spec-block": "3", "spec-accept": "0.6", "drafter": "free", "prefill": "true"},
		{"policy": "belady", "spec-from-trace": "true"},
		{"policy": "les"},
		{"policy": "les", "top-n": "5", "depth": "2", "prefill": "true"},
		{"policy": "les", "threshold": "0.9", "max-candidates": "16", "spec-block": "4", "spec-accept": "0.5", "drafter": "mtp"},
		{"policy": "lru", "spec-from-trace": "true", "prefill": "true"},
		{"policy": "les", "spec-block": "2", "spec-accept-from-trace": "true", "drafter": "free"},
	}
	loaded, streamed := &Inputs{MaxMemory: -1, StreamAbove: 1 << 40}, &Inputs{MaxMemory: -1, StreamAbove: -1}
	for _, path := range []string{full, compact} {
		for _, c := range cases {
			if path == compact && c["spec-accept-from-trace"] != "" {
				continue // one token per pass: refused (traces.SingleTokenPassesError)
			}
			opts := map[string]string{"trace": path, "cache": "2GiB"}
			for k, v := range c {
				opts[k] = v
			}
			want, ws := resolveRun(t, loaded, opts)
			got, gs := resolveRun(t, streamed, opts)
			if ws || !gs {
				t.Fatalf("%v: loaded run streamed %v, streamed run streamed %v", c, ws, gs)
			}
			if got != want {
				t.Errorf("%s %v: streamed\n%s\nloaded\n%s", path, c, got, want)
			}
		}
	}
}

// TestStreamAboveDefault: a small trace loads by default; one above
// TestStreamedSyntheticMatchesGenerated: a synthetic trace that streams
// (generated again for each pass, never held) gives the in-memory run's
// resolved spec, hash and Result byte for byte, for every policy, with
// prefill tokens and several sequences, and cache auto (the longest
// sequence from synthSummary, not a pass), and speculative decoding (the
// draft statistics from a first pass).
func TestStreamedSyntheticMatchesGenerated(t *testing.T) {
	cases := []map[string]string{
		{"policy": "lru"},
		{"policy": "lfu", "cache": "auto"},
		{"policy": "ondemand", "layout": "gguf-mmap"},
		{"policy": "pinned-hot"},
		{"policy": "oracle", "prefill": "true"},
		{"policy": "belady", "cache": "auto"},
		{"policy": "les"},
		{"policy": "les", "top-n": "12", "prefill": "true", "cache": "auto"},
		{"policy": "les", "threshold": "0.8"},
		{"policy": "les", "spec-block": "3", "spec-accept": "0.6", "drafter": "free"},
	}
	loaded, streamed := &Inputs{MaxMemory: -1, StreamAbove: 1 << 40}, &Inputs{MaxMemory: -1, StreamAbove: -1}
	for _, c := range cases {
		opts := map[string]string{"tokens": "40", "cache": "2GiB"}
		for k, v := range c {
			if k != "prefill" { // NB: set below: the options' default trace has no prompt
				opts[k] = v
			}
		}
		s, err := FromOptions(opts)
		if err != nil {
			t.Fatal(err)
		}
		s.Trace.Synthetic.PromptTokens, s.Trace.Synthetic.Sequences = 7, 2
		s.Prefill = c["prefill"] == "true"
		want, ws := resolveRunSpec(t, loaded, s, c)
		got, gs := resolveRunSpec(t, streamed, s, c)
		if ws || !gs {
			t.Fatalf("%v: in-memory run streamed %v, streamed run streamed %v", c, ws, gs)
		}
		if got != want {
			t.Errorf("%v: streamed\n%s\ngenerated\n%s", c, got, want)
		}
	}
}

// TestSynthSummary: synthSummary is what summarize finds in the generated
// steps.
func TestSynthSummary(t *testing.T) {
	m, err := devices.LookupModel("minicpm-v-4.7-35b-a3b", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range [][3]int{{5, 0, 1}, {5, 3, 1}, {4, 6, 3}, {1, 0, 2}} {
		o := traces.DefaultSynthOptions()
		o.Tokens, o.PromptTokens, o.Sequences = shape[0], shape[1], shape[2]
		_, steps, err := traces.Synth(m, o)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := *synthSummary(o), *summarize(steps, true); got.longest != want.longest || got.prefill != want.prefill || got.multi != want.multi || !got.passes {
			t.Errorf("%v: synthSummary %+v, summarize %+v", shape, got, want)
		}
	}
}

// StreamAbove streams.
func TestStreamAboveDefault(t *testing.T) {
	path := writeTrace(t, 10, 0, 1, nil)
	s, err := FromOptions(map[string]string{"trace": path, "policy": "lru", "cache": "1GiB"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		above  int64
		stream bool
	}{{0, false}, {1 << 10, true}} {
		p, err := (&Inputs{MaxMemory: -1, StreamAbove: tc.above}).Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		if p.Streamed() != tc.stream || (p.Steps == nil) != tc.stream {
			t.Errorf("StreamAbove %d: streamed %v with %d steps in memory", tc.above, p.Streamed(), len(p.Steps))
		}
	}
}

// TestStreamCorruptMidway: bytes damaged in the middle of a trace file end
// a streamed run with the file, the row and why, not a panic.
func TestStreamCorruptMidway(t *testing.T) {
	path := writeTrace(t, 2000, 0, 0, nil) // 80,000 rows: two row groups
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Damage the experts column, which every run reads, in a later row group.
	at := lastExpertsChunk(t, path)
	for i := at; i < at+64; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := FromOptions(map[string]string{"trace": path, "policy": "lru", "cache": "1GiB"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := (&Inputs{MaxMemory: -1, StreamAbove: -1}).Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run()
	errgolden.Check(t, "corrupt row", err)
	t.Log(err)
}

// TestStreamRefusedWithEstimate: a streamed run that cannot fit is refused
// with its estimate, which counts one pass of steps, not the trace.
func TestStreamRefusedWithEstimate(t *testing.T) {
	path := writeTrace(t, 50, 0, 1, nil)
	m, steps, err := traceFootprint(path)
	if err != nil {
		t.Fatal(err)
	}
	est := EstimateStreamMemory(m, steps, traceColumns(&Spec{Policy: Policy{Name: "oracle"}}), "oracle", 0, 1)
	whole := EstimateMemory(m, steps, traceColumns(&Spec{Policy: Policy{Name: "oracle"}}), "oracle", 0)
	if est.PolicyBytes != whole.PolicyBytes || est.TraceBytes-streamBatchBytes-8*steps >= whole.TraceBytes/10 {
		t.Errorf("stream estimate %+v, loaded %+v", est, whole)
	}
	s, err := FromOptions(map[string]string{"trace": path, "policy": "oracle", "cache": "1GiB"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Inputs{MaxMemory: est.Total() - 1, StreamAbove: -1}).Resolve(s)
	errgolden.Check(t, "streamed", err)
	if _, err := (&Inputs{MaxMemory: est.Total(), StreamAbove: -1}).Resolve(s); err != nil {
		t.Errorf("at the estimate: %v", err)
	}
}

// lastExpertsChunk is the file offset in the middle of the experts column
// chunk of path's last row group (read by a later record batch than the first).
func lastExpertsChunk(t *testing.T, path string) int {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := r.NumRowGroups()
	if n < 2 {
		t.Fatalf("%d row groups, want several", n)
	}
	rg := r.MetaData().RowGroup(n - 1)
	for i := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		if cc.PathInSchema().String() == "experts.list.element" {
			return int(cc.DataPageOffset() + cc.TotalCompressedSize()/2)
		}
	}
	t.Fatal("no experts column")
	return 0
}

// TestStreamProgress: a streamed run reports the steps read, rising, ending
// at TraceSteps; the report does not change the result.
func TestStreamProgress(t *testing.T) {
	s, err := FromOptions(map[string]string{"tokens": "9000", "cache": "2GiB", "policy": "les"})
	if err != nil {
		t.Fatal(err)
	}
	in := &Inputs{MaxMemory: -1, StreamAbove: -1}
	run := func(progress bool) (string, []int64) {
		p, err := in.Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		var seen []int64
		if progress {
			p.Progress = func(n int64) { seen = append(seen, n) }
		}
		o, err := p.Run()
		if err != nil {
			t.Fatal(err)
		}
		if !p.Streamed() || p.TraceSteps() != 9000 {
			t.Fatalf("streamed %v, %d steps", p.Streamed(), p.TraceSteps())
		}
		b, _ := json.Marshal(o.Result)
		return string(b), seen
	}
	plain, _ := run(false)
	got, seen := run(true)
	if got != plain {
		t.Error("reporting progress changed the result")
	}
	want := []int64{4096, 8192, 9000}
	if len(seen) != len(want) {
		t.Fatalf("progress %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("progress %v, want %v", seen, want)
		}
	}
}

// TestFirstPassProgress: the first pass over a streamed trace (here oracle's
// future of a synthetic trace) reports its steps out of the trace's; a run
// that needs no first pass reports nothing.
func TestFirstPassProgress(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   []int64
	}{{"oracle", []int64{4096, 5000}}, {"lru", nil}} {
		s, err := FromOptions(map[string]string{"tokens": "5000", "cache": "2GiB", "policy": c.policy})
		if err != nil {
			t.Fatal(err)
		}
		var seen []int64
		in := &Inputs{MaxMemory: -1, StreamAbove: -1, FirstPass: func(done, total int64) {
			if total != 5000 {
				t.Errorf("%s: total %d, want 5000", c.policy, total)
			}
			seen = append(seen, done)
		}}
		if _, err := in.Resolve(s); err != nil {
			t.Fatal(err)
		}
		if len(seen) != len(c.want) || len(seen) > 0 && (seen[0] != c.want[0] || seen[1] != c.want[1]) {
			t.Errorf("%s: first pass reported %v, want %v", c.policy, seen, c.want)
		}
	}
}
