package agent

import (
	"bytes"
	"cmp"
	"context"
	"fmt"

	"github.com/lessim/lessim/traces"
)

// RecordedTrace is a recorded trace file, checked row by row, with its
// metadata (the agent's model spec and provenance) and steps by phase.
type RecordedTrace struct {
	Parquet                     []byte
	Meta                        traces.Meta
	DecodeTokens, PrefillTokens int
}

// CheckTrace reads a trace file held in memory completely (every step is
// validated by the trace reader) and checks it has tokens decode steps.
func CheckTrace(b []byte, tokens int) (*RecordedTrace, error) {
	r, err := traces.NewReader(bytes.NewReader(b), "recorded trace")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	t := &RecordedTrace{Parquet: b, Meta: r.Meta()}
	for r.Next() {
		if r.Step().Phase == traces.Decode {
			t.DecodeTokens++
		} else {
			t.PrefillTokens++
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if t.DecodeTokens != tokens {
		return nil, fmt.Errorf("recorded trace: %d decode tokens, %d asked for", t.DecodeTokens, tokens)
	}
	return t, nil
}

// Record asks the agent to record the routing of tokens greedy decode
// tokens and returns the trace, checked (CheckTrace: a failure is
// ErrBadAgent).
func (c *Client) Record(ctx context.Context, tokens int) (*RecordedTrace, error) {
	req := Record{Tokens: tokens}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	l, err := c.do(ctx, PathRecord, req, nil)
	if err != nil || l.Trace == nil {
		return nil, cmp.Or(err, c.missing("trace"))
	}
	t, err := CheckTrace(l.Trace.Parquet, tokens)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAgent, err)
	}
	return t, nil
}
