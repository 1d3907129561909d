package agent

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/lessim/lessim/sim"
)

// seriesSim is the simulator engine announcing per-token series: it fills
// each sample's series fields from what the simulator knows (compute =
// time − stall, no faults, no in-flight hits or prefetch counts, no stray
// bytes). The live engine (build tag llamacpp) is the real one; this one
// lets the protocol's series path run without llama.cpp.
type seriesSim struct{ *SimEngine }

func (e seriesSim) Capabilities() []string {
	return []string{CapLoadModel, CapCalibrate, CapRun, CapCancel, CapRecord, CapSeries}
}

func (e seriesSim) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	return e.SimEngine.Run(ctx, spec, func(s TokenSample) error {
		s.ComputeNS, s.InflightHits, s.PrefetchLoads, s.MajorFaults, s.StrayBytes = ptr(s.TimeNS-s.StallNS), ptr[int64](0), ptr[int64](0), ptr[int64](0), ptr[int64](0)
		return emit(s)
	})
}

// TestRunSeries: a run that asks for its series gets every series field on
// every token, consistent with the run's result; the same run without the
// opt-in gets none of them; the samples are otherwise
// identical (the simulator is deterministic).
func TestRunSeries(t *testing.T) {
	a := startAgent(t, seriesSim{newTestEngine(t, 0)}, fastLimits())
	c, err := Dial(context.Background(), a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := Supports(c, CapSeries); err != nil {
		t.Fatal(err)
	}
	res, series, err := RunSeriesOn(context.Background(), c, json.RawMessage(testSpec))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckRun(series, res); err != nil {
		t.Fatal(err)
	}
	var plain []TokenSample
	if _, err := c.Run(context.Background(), json.RawMessage(testSpec), func(s TokenSample) error { plain = append(plain, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(plain) != len(series) || len(series) != 24 {
		t.Fatalf("%d plain samples, %d with series, want 24", len(plain), len(series))
	}
	for i, s := range series {
		if m := s.MissingSeries(); m != "" {
			t.Fatalf("pass %d: no %s", i, m)
		}
		if *s.ComputeNS != s.TimeNS-s.StallNS {
			t.Errorf("pass %d: compute_ns %d, time − stall %d", i, *s.ComputeNS, s.TimeNS-s.StallNS)
		}
		if plain[i].HasSeries() {
			t.Errorf("pass %d: series fields in a run that did not ask", i)
		}
		a, _ := json.Marshal(s.WithoutSeries())
		b, _ := json.Marshal(plain[i])
		if string(a) != string(b) {
			t.Errorf("pass %d: %s with series, %s without", i, a, b)
		}
	}
}

// TestRunSeriesNotAnnounced: an engine without CapSeries refuses a run that
// asks for its series (invalid_spec, the connection stays usable), and the
// client says so before asking.
func TestRunSeriesNotAnnounced(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	c, err := Dial(context.Background(), a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := RunSeriesOn(context.Background(), c, json.RawMessage(testSpec)); err == nil || a.srv.Stats().Requests != 0 {
		t.Errorf("RunSeriesOn an agent without series: %v, %d requests sent; want an error before any", err, a.srv.Stats().Requests)
	}
	if _, err := c.run(context.Background(), Run{Spec: json.RawMessage(testSpec), Series: true}, nil); !errors.Is(err, ErrRefused) {
		t.Errorf("a run asking for series: %v, want invalid_spec", err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Errorf("connection unusable after the refusal: %v", err)
	}
}

// TestTokenSampleSeriesValidate: series fields are checked like the
// others (no negatives, compute within the pass's time).
func TestTokenSampleSeriesValidate(t *testing.T) {
	ok := TokenSample{Pass: 0, Tokens: 1, TimeNS: 100, StallNS: 40, ComputeNS: ptr[int64](60), MajorFaults: ptr[int64](2)}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []TokenSample{
		{Pass: 0, Tokens: 1, TimeNS: 100, ComputeNS: ptr[int64](101)},
		{Pass: 0, Tokens: 1, TimeNS: 100, MajorFaults: ptr[int64](-1)},
		{Pass: 0, Tokens: 1, TimeNS: 100, StrayBytes: ptr[int64](-5)},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
