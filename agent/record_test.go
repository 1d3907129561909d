package agent

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// plainEngine hides every method but Engine's: an engine that does not record.
type plainEngine struct{ Engine }

// TestRecord: the simulator agent announces record and returns the
// synthetic routing its runs simulate, checked on the client; without a
// loaded model, or from an engine that does not record, the request is
// refused; a bad token count is refused by the client.
func TestRecord(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, 0)
	a := startAgent(t, e, fastLimits())
	c, err := Dial(ctx, a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !slices.Contains(c.Info().Capabilities, CapRecord) {
		t.Errorf("capabilities %v lack record", c.Info().Capabilities)
	}
	if _, err := c.Record(ctx, 4); !errors.Is(err, ErrRefused) {
		t.Errorf("record before load_model: %v", err)
	} else {
		errgolden.Check(t, "no model", err)
	}
	if _, err := c.LoadModel(ctx, "qwen3-30b-a3b"); err != nil {
		t.Fatal(err)
	}
	tr, err := c.Record(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	if tr.DecodeTokens != 6 || tr.PrefillTokens != 0 || tr.Meta.Model.Name == "" || tr.Meta.Origin != "synth" || tr.Meta.LookaheadDepth != 1 {
		t.Errorf("trace: %d decode, %d prefill, model %q, origin %q, lookahead %d", tr.DecodeTokens, tr.PrefillTokens, tr.Meta.Model.Name, tr.Meta.Origin, tr.Meta.LookaheadDepth)
	}
	again, err := c.Record(ctx, 6)
	if err != nil || string(again.Parquet) != string(tr.Parquet) {
		t.Errorf("a second record differs (deterministic routing expected): %v", err)
	}
	errgolden.Check(t, "0 tokens", errgolden.Err(c.Record(ctx, 0)))
	if err := c.Ping(ctx); err != nil {
		t.Errorf("connection after refusals: %v", err)
	}
	if _, err := CheckTrace(tr.Parquet, 7); err == nil {
		t.Error("a trace of 6 tokens passed as 7")
	}
	if _, err := CheckTrace(tr.Parquet[:len(tr.Parquet)-9], 6); err == nil {
		t.Error("a truncated trace passed")
	}

	p := startAgent(t, plainEngine{e}, fastLimits())
	pc, err := Dial(ctx, p.target, p.token)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if slices.Contains(pc.Info().Capabilities, CapRecord) {
		t.Errorf("an engine that does not record announces it: %v", pc.Info().Capabilities)
	}
	if _, err := pc.Record(ctx, 4); !errors.Is(err, ErrRefused) {
		t.Errorf("record on a plain engine: %v", err)
	} else {
		errgolden.Check(t, "plain engine", err)
	}
	if err := pc.Ping(ctx); err != nil {
		t.Errorf("connection after refusal: %v", err)
	}
}
