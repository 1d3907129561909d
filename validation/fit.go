//go:build llamacpp && linux

package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/runtime/live"
)

// FitRun runs one fit point live (round r, from 0) and returns its series
// as a run (written to Out/fit/POLICY-CACHE-rN.parquet and read back: the
// file calibrate --from-run would read).
func (l localRunner) FitRun(ctx context.Context, p FitPoint, r int) (*runs.Run, error) {
	o := &l.o
	if err := os.MkdirAll(filepath.Join(o.Out, FitDir), 0o755); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	lo := l.options(p.Policy, p.CacheBytes, o.Tokens)
	lo.KeepSeries = true
	_, series, err := live.Run(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("validate: fit run %s: %w", p, err)
	}
	name := strings.NewReplacer("%", "pct", "/", "_").Replace(fmt.Sprintf("%s-%s-r%d", p.Policy, p.Cache, r+1))
	path := filepath.Join(o.Out, FitDir, name+".parquet")
	if err := live.WriteSeries(path, series); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	run, err := runs.ReadLiveSeries(path)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return run, nil
}
