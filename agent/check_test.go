package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/sim"
)

// TestCheckPasses: the reference agent passes every conformance check.
func TestCheckPasses(t *testing.T) {
	lim := fastLimits()
	lim.HandshakeTimeout = 300 * time.Millisecond
	a := startAgent(t, newTestEngine(t, 10), lim)
	res := Check(context.Background(), a.target, a.token, CheckOptions{Model: "qwen3-30b-a3b", Calibrate: true, CancelWithin: 500 * time.Millisecond}, nil)
	if len(res) != 22 {
		t.Errorf("%d checks ran, want 22", len(res))
	}
	for _, r := range res {
		if r.Outcome != CheckPass {
			t.Errorf("%s %s: %s", r.Outcome, r.Name, r.Detail)
		}
	}
	if t.Failed() {
		return
	}
	waitStats(t, a.srv, func(s Stats) bool { return s.Active == 0 && !s.Running })
}

// unitSlip is a faulty engine: it reports pass times in microseconds while
// the result stays in nanoseconds (a unit mistake a device agent could make).
type unitSlip struct{ *SimEngine }

func (u unitSlip) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	return u.SimEngine.Run(ctx, spec, func(s TokenSample) error {
		s.StartNS, s.TimeNS, s.StallNS = s.StartNS/1000, max(s.TimeNS/1000, 1), s.StallNS/1000
		return emit(s)
	})
}

// stubborn is a faulty engine that ignores cancellation.
type stubborn struct{ *SimEngine }

func (s stubborn) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	return s.SimEngine.Run(context.WithoutCancel(ctx), spec, func(ts TokenSample) error { emit(ts); return nil })
}

// TestCheckCatchesFaults: a unit mistake in the samples fails the run check;
// an engine that ignores cancel fails the cancel checks.
func TestCheckCatchesFaults(t *testing.T) {
	outcome := func(e Engine, name string) CheckResult {
		a := startAgent(t, e, fastLimits())
		for _, r := range Check(context.Background(), a.target, a.token, CheckOptions{Model: "qwen3-30b-a3b", CancelWithin: 100 * time.Millisecond}, nil) {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no check %q", name)
		return CheckResult{}
	}
	if r := outcome(unitSlip{newTestEngine(t, 10)}, "run: stream and result"); r.Outcome != CheckFail || !strings.Contains(r.Detail, "time_ns") {
		t.Errorf("unit slip: %+v", r)
	}
	if r := outcome(stubborn{newTestEngine(t, 5)}, "busy: same connection, then cancel"); r.Outcome != CheckFail || !strings.Contains(r.Detail, "does not stop") {
		t.Errorf("an engine ignoring cancel passed: %+v", r)
	}
}
