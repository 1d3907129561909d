//go:build llamacpp && linux

package validation

import (
	"context"

	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/runtime/live"
)

// FitRun runs one fit point live (round r, from 0) and returns its series
// as a run (written to Out/fit/POLICY-CACHE-rN.parquet and read back: the
// file calibrate --from-run would read).
func (l localRunner) FitRun(ctx context.Context, p FitPoint, r, tokens int) (*runs.Run, error) {
	lo := l.o.LiveOptions(l.c, p.Policy, p.CacheBytes, tokens)
	lo.KeepSeries = true
	_, series, err := live.Run(ctx, lo)
	if err != nil {
		return nil, err
	}
	return writeFitSeries(l.o.Out, p, r, series)
}
