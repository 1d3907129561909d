package fit

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runs"
)

// ReplayPlan resolves the replay of measured run s: s names the run's
// routing (a trace file) and the engine settings that reproduce its cache
// behaviour (policy, cache, layout, compute order, prefill); the device is
// base's, and an unset cache is the run summary's cache budget
// (cache_budget_MiB).
func ReplayPlan(s experiment.Spec, run *runs.Run, base *devices.Profile) (*experiment.Plan, error) {
	d, err := base.Device()
	if err != nil {
		return nil, err
	}
	s.Device = experiment.Device{Profile: d}
	if s.Cache == (experiment.Cache{}) {
		if s.Cache, err = runCache(run); err != nil {
			return nil, err
		}
	}
	var in experiment.Inputs
	return in.Resolve(s)
}

// runCache is the run summary's cache budget.
func runCache(run *runs.Run) (experiment.Cache, error) {
	v, ok := run.Summary["cache_budget_MiB"]
	switch {
	case run.Format == "lessim-live-series":
		return experiment.Cache{}, errors.New("--cache: a lessim live series does not record the run's cache: pass --cache, as the live run was given it (a size such as 512MiB, or a percentage of the expert bytes)")
	case !ok:
		return experiment.Cache{}, errors.New("--cache: the run's summary line gives no cache budget (cache_budget_MiB): pass --cache, the run's cache size")
	}
	mib, err := strconv.ParseFloat(v, 64)
	if err != nil || !(mib > 0 && mib < 1<<24) {
		return experiment.Cache{}, fmt.Errorf("--cache: the run's summary cache_budget_MiB=%q is not a size; give --cache", v)
	}
	return experiment.Cache{Bytes: int64(mib * (1 << 20))}, nil
}
