//go:build llamacpp && linux

package validation

import (
	"context"
	"errors"

	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// Run checks the options, records the trace (unless Options.Trace is set)
// with the prompt and token count of the live runs, greedy and on 1 thread,
// so the recorded routing is the routing the live runs see; then simulates
// every policy × cache with the calibrated profile and runs it live on this
// machine Options.Repeats times (see runPoints). The files go to
// Report.Stage (see Options.Out).
func Run(ctx context.Context, o Options) (*Report, error) {
	c, err := o.Check()
	if err != nil {
		return nil, err
	}
	resolve := func(_ string, caches []string) ([]int64, error) {
		b, errs := resolveCaches(c.Model, caches)
		return b, errors.Join(errs...)
	}
	return inStage(o, func(o Options) (*Report, error) {
		return runPoints(ctx, o, localRunner{o: o, c: c}, resolve, c.Fit)
	})
}

// localRunner records and runs live with llama.cpp on this machine.
type localRunner struct {
	o Options
	c *Checked
}

func (l localRunner) Record(ctx context.Context, path string, tokens int) error {
	ro := record.DefaultOptions()
	ro.ModelPath, ro.Prompts, ro.PromptSet = l.o.Model, []string{l.o.prompt()}, "validate"
	ro.Tokens, ro.Temperature, ro.Threads, ro.Logits, ro.Out = tokens, 0, 1, false, path
	_, err := record.Record(ctx, ro)
	return err
}

func (l localRunner) Live(ctx context.Context, p *Point, tokens int) (*sim.Result, error) {
	res, _, err := live.Run(ctx, l.o.LiveOptions(l.c, p.Policy, p.CacheBytes, tokens))
	if err != nil {
		return nil, err
	}
	if res.Source == "" {
		res.Source = sim.SourceMeasured
	}
	return res, nil
}
