package experiment

import (
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

// TestMemoryRefused: with a tiny limit a run is refused before its trace is
// loaded or generated, with the estimate in the message; with no limit the
// same spec runs.
func TestMemoryRefused(t *testing.T) {
	path := writeTrace(t, 20, 0, 1, nil)
	for _, opts := range []map[string]string{
		{"trace": path, "policy": "lru", "cache": "2GiB"},
		{"trace": path, "policy": "oracle", "cache": "2GiB"},
		{"policy": "les", "cache": "2GiB", "tokens": "20"},
	} {
		s, err := FromOptions(opts)
		if err != nil {
			t.Fatal(err)
		}
		loads := 0
		in := Inputs{MaxMemory: 4096, ReadTrace: func(p string) (*LoadedTrace, error) { loads++; return ReadTraceFile(p) }}
		_, err = in.Resolve(s)
		errgolden.Check(t, opts["policy"], err)
		if loads != 0 {
			t.Errorf("%v: the trace was loaded before the refusal", opts)
		}
		in.MaxMemory = -1
		if _, err := in.Resolve(s); err != nil {
			t.Errorf("%v without a limit: %v", opts, err)
		}
	}
}

// TestEstimateMemory checks what the estimate counts: skipped columns cost
// nothing, lookahead one float32 per expert, oracle 6 bytes per selection,
// 1 per token and its victim index (8 bytes and a bit per token and layer,
// 1/32 more for the bitset's summary levels).
func TestEstimateMemory(t *testing.T) {
	m, err := devices.LookupModel(DefaultModel, "")
	if err != nil {
		t.Fatal(err)
	}
	meta := traces.Meta{Model: *m, LookaheadDepth: 1, HasLogits: true, HasRouterInputs: true}
	const steps = 1000
	none := traces.Columns{NoLogits: true, NoRouterInputs: true, NoLookahead: true}
	L, E, K := int64(len(m.Layers)), int64(m.Experts), int64(m.TopK)
	lru := EstimateMemory(meta, steps, none, "lru", 0)
	les := EstimateMemory(meta, steps, traces.Columns{NoLogits: true, NoRouterInputs: true}, "les", 0)
	if d := les.TraceBytes - lru.TraceBytes; d < steps*L*E*4 || d > steps*L*(E*4+64) {
		t.Errorf("lookahead adds %d bytes, want about %d", d, steps*L*E*4)
	}
	all := EstimateMemory(meta, steps, traces.Columns{}, "lru", 0)
	if d := all.TraceBytes - les.TraceBytes; d != steps*L*(E+int64(m.Hidden))*4 {
		t.Errorf("logits and router inputs add %d bytes, want %d", d, steps*L*(E+int64(m.Hidden))*4)
	}
	or := EstimateMemory(meta, steps, none, "oracle", 0)
	if or.PolicyBytes != 6*steps*L*K+steps+8*steps*L+(steps*L/8)*33/32 || lru.PolicyBytes != 0 {
		t.Errorf("policy bytes: oracle %d, lru %d", or.PolicyBytes, lru.PolicyBytes)
	}
	if lru.Total() != lru.TraceBytes+lru.StateBytes || lru.TraceBytes <= 0 {
		t.Errorf("lru estimate %+v", lru)
	}
}

func TestMemAvailable(t *testing.T) {
	in := []byte("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   12345678 kB\n")
	if n, ok := memAvailable(in); !ok || n != 12345678*1024 {
		t.Errorf("memAvailable = %d, %v", n, ok)
	}
	for _, bad := range []string{"", "MemTotal: 1 kB\n", "MemAvailable: x kB\n", "MemAvailable: -5 kB\n"} {
		if _, ok := memAvailable([]byte(bad)); ok {
			t.Errorf("memAvailable(%q) ok", bad)
		}
	}
}

// TestMemoryRefusedPredictor: a stated predictor's scores (full vectors for
// every step) are checked too, after the base trace fit.
func TestMemoryRefusedPredictor(t *testing.T) {
	path := writeTrace(t, 30, 0, 0, nil)
	s, err := FromOptions(map[string]string{"trace": path, "policy": "les", "cache": "2GiB", "predict-recall": "0.8"})
	if err != nil {
		t.Fatal(err)
	}
	m, steps, err := traceFootprint(path)
	if err != nil {
		t.Fatal(err)
	}
	base := EstimateMemory(m, steps, traceColumns(&s), "les", 8).Total()
	in := Inputs{MaxMemory: base + 1}
	_, err = in.Resolve(s)
	errgolden.Check(t, "predictor", err)
	in.MaxMemory = -1
	if _, err := in.Resolve(s); err != nil {
		t.Error(err)
	}
}
