package fit

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

const (
	refTrace = "../../shared/reference/traces/qwen.route.csv"
	refRun   = "../../shared/reference/runs/qwen.metrics.csv"
)

// Reference: ../shared/reference/README.md (BigMoeOnEdge, github.com/Helldez/BigMoeOnEdge,
// Apache-2.0): the qwen run decoded 128 tokens at 176.8 ms mean with a 4000 MiB
// global LRU cache, 4 I/O threads, O_DIRECT per-expert reads; its mgmt_ms grows
// about 0.12 ms per MB read (a straight line, R² 0.997).
func TestFromRunReference(t *testing.T) {
	for _, p := range []string{refTrace, refRun} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("reference data absent: %v", err)
		}
	}
	meta, steps, err := traces.ImportBMoE(refTrace)
	if err != nil {
		t.Fatal(err)
	}
	run, err := runs.Read(refRun, "bmoe-metrics-csv")
	if err != nil {
		t.Fatal(err)
	}
	base, err := devices.LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	d, err := base.Device()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qwen.parquet")
	w, err := traces.Create(path, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		if err := w.Write(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var in experiment.Inputs
	rp := replayPlan(t, func(s *experiment.Spec) {
		s.Trace, s.Model = experiment.Trace{Path: path}, nil
		s.Cache, s.Layout = experiment.Cache{Bytes: 4000 << 20}, string(sim.LayoutPerExpert)
	}, d, &in)
	got, err := FromRun(base, rp, run, "qwen.metrics.csv")
	if err != nil {
		t.Fatal(err)
	}
	e := got.Errors
	t.Logf("mean %.1f ms predicted vs %.1f measured; median %.1f vs %.1f; |err| p50 %.1f%% p90 %.1f%%; bytes matched %d/%d",
		e.MeanPredNS/1e6, e.MeanMeasNS/1e6, e.MedianPredNS/1e6, e.MedianMeasNS/1e6, 100*e.P50Abs, 100*e.P90Abs, got.BytesMatched, got.Tokens)
	for _, p := range got.Params {
		t.Logf("%s = %.4g ± %.2g identified=%v %s", p.Name, p.Value, p.SE, p.Identified, p.Why)
	}
	if rel := math.Abs(e.MeanPredNS/e.MeanMeasNS - 1); rel > 0.05 {
		t.Errorf("mean per-token time off by %.1f%% (want within 5%%)", 100*rel)
	}
	if rel := math.Abs(e.MedianPredNS/e.MedianMeasNS - 1); rel > 0.10 {
		t.Errorf("median per-token time off by %.1f%% (want within 10%%)", 100*rel)
	}
	if got.Load == nil || math.Abs(got.Load.Slope/0.12-1) > 0.2 {
		t.Errorf("load cost line = %+v, want about 0.12 ms per MB", got.Load)
	}
	if got.BytesMatched != got.Tokens {
		t.Errorf("the replay reproduces the bytes of %d of %d tokens", got.BytesMatched, got.Tokens)
	}
	if _, err := got.Profile.Device(); err != nil {
		t.Errorf("fitted profile invalid: %v", err)
	}
}
