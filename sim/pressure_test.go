package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
)

// flatDevice is tinyDevice with flash at 1 GB/s for every read size and
// concurrency, so that one 128 KiB fault read (the read-ahead) takes 80 us of
// latency + 131,072 ns of transfer.
func flatDevice() *devices.Device {
	d := tinyDevice()
	d.Flash.SingleLane = []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 1e9}}
	d.Flash.Aggregate = []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 1e9}}
	return d
}

// TestMemoryPressureByHand isolates the memory-pressure model. The app holds
// cache 12 MiB + resident weights 32 MiB + runtime 1 MiB = 45 MiB (no KV in
// tinyModel). With the app limit 100 KiB below that, 100 KiB of weights are
// refaulted every pass: one fault of max(16 KiB page, 128 KiB read-ahead),
// costing 2 us of fault CPU + 80 us latency + 131,072 ns transfer = 213,072
// ns, on the compute thread at the start of the pass (lru: the flash is idle
// then, so nothing overlaps). A limit the app fits under, or none, changes
// nothing but the budget (TestAppLimitBoundsBudget).
func TestMemoryPressureByHand(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 80, 5)
	cfg := sim.Config{Model: m, Device: flatDevice(), CacheBytes: 12 * mib, Layout: sim.LayoutPerExpert, CachedFirst: true, SpecBlock: 1}
	base := run(t, cfg, steps, "lru", policies.DefaultParams(m))

	withLimit := func(limit int64) *sim.Result {
		d := flatDevice()
		d.AppLimitBytes, d.RuntimeBytes = limit, mib
		c := cfg
		c.Device = d
		return run(t, c, steps, "lru", policies.DefaultParams(m))
	}
	const footprint = 45 * mib
	fits := withLimit(footprint)
	if fits.AppFootprintBytes != footprint {
		t.Errorf("footprint %d, want %d", fits.AppFootprintBytes, footprint)
	}
	if fits.DeviceBudgetBytes != 12*mib {
		t.Errorf("budget under the limit %d, want limit − runtime − resident weights = %d", fits.DeviceBudgetBytes, 12*mib)
	}
	fits.AppFootprintBytes, fits.DeviceBudgetBytes = 0, base.DeviceBudgetBytes
	if a, b := mustJSON(t, base), mustJSON(t, fits); a != b {
		t.Errorf("a footprint under the limit changed the result:\n%s\n%s", a, b)
	}

	on := withLimit(footprint - 100<<10)
	const perFault, chunk = 2000 + 80_000 + 131_072, 128 << 10
	if on.PressureFaults != on.Passes || on.PressureFaultBytes != on.Passes*chunk || on.PressureNS != on.Passes*perFault {
		t.Errorf("pressure: %d faults, %d bytes, %d ns over %d passes; want 1 fault of %d bytes and %d ns per pass",
			on.PressureFaults, on.PressureFaultBytes, on.PressureNS, on.Passes, chunk, perFault)
	}
	if d := on.TimeNS - base.TimeNS; d != on.PressureNS {
		t.Errorf("time grew by %d ns, want the pressure's %d", d, on.PressureNS)
	}
	if d := on.FlashBytes - base.FlashBytes; d != on.PressureFaultBytes {
		t.Errorf("flash bytes grew by %d, want %d", d, on.PressureFaultBytes)
	}
	if d := on.StallNS - base.StallNS; d != on.PressureNS {
		t.Errorf("stall grew by %d, want %d", d, on.PressureNS)
	}
	if !hasWarning(on, "memory pressure: the app holds 45.00 MiB") || hasWarning(on, "terminate") {
		t.Errorf("warnings %q", on.Warnings)
	}
	if hasWarning(base, "memory pressure") || hasWarning(fits, "memory pressure") {
		t.Error("pressure warning without pressure")
	}

	// Over by more than every mapped weight: all 32 MiB refault (256 faults)
	// and the result says the OS would terminate the app.
	over := withLimit(footprint - 40*mib)
	if over.PressureFaults != 256*over.Passes || !hasWarning(over, "terminate the app") {
		t.Errorf("40 MiB over: %d faults over %d passes, warnings %q", over.PressureFaults, over.Passes, over.Warnings)
	}
}

// TestMemoryPressureValidate: a negative app limit, or an app limit without
// a page size, is refused.
func TestMemoryPressureValidate(t *testing.T) {
	cfg := baseConfig(12 * mib)
	d := tinyDevice()
	d.AppLimitBytes, d.Flash.PageBytes = 1<<30, 0
	cfg.Device = d
	errgolden.Check(t, "no-page-size", cfg.Validate())
	d.AppLimitBytes, d.Flash.PageBytes = -1, 16<<10
	errgolden.Check(t, "negative-limit", cfg.Validate())
}

func mustJSON(t *testing.T, r *sim.Result) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hasWarning(r *sim.Result, sub string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// TestAppLimitBoundsBudget: with an app limit the device budget (and so cache
// auto) is at most app limit − runtime − the model's memory; the budget from
// RAM still binds when it is smaller, and without a limit nothing changes.
func TestAppLimitBoundsBudget(t *testing.T) {
	m := hybridModel() // 32 MiB resident, 1 KiB of KV per token, 1 MiB of state
	d := tinyDevice()  // RAM 8 GiB − reserve 1 GiB
	ram := sim.MemoryBudget(m, d, 1000, true)
	if want := int64(7<<30 - 32*mib - 1000*1024 - mib); ram != want || sim.DeviceBudget(m, d, 1000)-mib != ram {
		t.Errorf("budget without a limit %d, want %d", ram, want)
	}
	d.AppLimitBytes, d.RuntimeBytes = 2<<30, 100*mib
	if got, want := sim.MemoryBudget(m, d, 1000, true), int64(2<<30-100*mib-32*mib-1000*1024-mib); got != want {
		t.Errorf("budget under a 2 GiB limit %d, want %d", got, want)
	}
	if got, want := sim.MemoryBudget(m, d, 1000, false), int64(2<<30-100*mib-32*mib-1000*1024); got != want {
		t.Errorf("budget without the state %d, want %d", got, want)
	}
	d.AppLimitBytes = 8 << 30
	if got := sim.MemoryBudget(m, d, 1000, true); got != ram {
		t.Errorf("budget under a limit above RAM − reserve %d, want %d", got, ram)
	}
}
