package fit

import (
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runs"
)

// TestReplayPlanCache: a replay without a cache takes the run summary's
// budget (cache_budget_MiB); a stated cache wins; a run that records none,
// or an unreadable one, is refused.
func TestReplayPlanCache(t *testing.T) {
	base, err := devices.LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	s := experiment.DefaultSpec()
	s.Device = experiment.Device{}
	bmoe := func(budget string) *runs.Run {
		r := &runs.Run{Format: "bmoe-metrics-csv", Summary: map[string]string{}}
		if budget != "" {
			r.Summary["cache_budget_MiB"] = budget
		}
		return r
	}
	s.Cache = experiment.Cache{}
	p, err := ReplayPlan(s, bmoe("512"), base)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Cache.Bytes != 512<<20 || p.Spec.Device.Profile == nil || p.Spec.Device.Profile.Name != base.Name {
		t.Errorf("cache %d bytes, device %+v: want the summary's 512 MiB on the base profile", p.Spec.Cache.Bytes, p.Spec.Device)
	}
	s.Cache = experiment.Cache{Size: "256MiB"}
	if p, err := ReplayPlan(s, bmoe("512"), base); err != nil || p.Spec.Cache.Bytes != 256<<20 {
		t.Errorf("stated cache: %v, %+v; want 256 MiB", err, p)
	}
	s.Cache = experiment.Cache{}
	for _, r := range []*runs.Run{bmoe(""), bmoe("lots"), bmoe("-1"), {Format: "lessim-live-series"}} {
		if _, err := ReplayPlan(s, r, base); err == nil {
			t.Errorf("run %s with summary %v: no error", r.Format, r.Summary)
		}
	}
}
