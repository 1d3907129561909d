package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// Options configures Run.
type Options struct {
	// Model is the GGUF Mixture-of-Experts model run live and recorded.
	Model string
	// DeviceFile is the calibrated profile of this machine (lessim calibrate).
	DeviceFile string
	// Trace reuses a recorded trace; "" records one into Out (TraceFile).
	// A reused trace must come from the same model, prompt and token count.
	Trace string
	// Policies and Caches span the points (policy-major order). A cache is
	// a size ("64MiB") or a percentage of all expert bytes ("25%").
	Policies []string
	Caches   []string
	// Tokens is the number of decode tokens recorded and measured per run.
	Tokens int
	// Repeats is the number of live runs per point (≥ 1).
	Repeats int
	// Prompt is the text prefilled before decoding; "" is live.DefaultPrompt.
	Prompt string
	// Lanes is the live driver's I/O lanes. 0 takes the profile's
	// flash.lanes, so that the simulation and the live runs keep the same
	// reads in flight (with fewer lanes more loads are still in flight when
	// a layer needs them: the hit vs in-flight split differs); a value
	// other than the profile's is refused.
	Lanes int
	// Fit lists points as "POLICY:CACHE" (e.g. "ondemand:25%", "les:25%"):
	// each is run live once more per round with its per-token series (on
	// this machine, or on the agent with a target: the run asks for its
	// series, protocol version 4), and the device profile's compute and
	// load-cost parameters and flash scale are fitted to all of them at
	// once (calibrate --from-run); the points are then simulated with the
	// fitted profile. None simulates with DeviceFile as it is.
	Fit []string
	// Out is the output folder (created if missing). Run and RunRemote
	// write into a staging folder beside it (Report.Stage), so that a
	// validation that fails or is interrupted leaves Out as it was.
	Out string
	// Version is lessim's version, written into the results rows.
	Version string
	// Progress, when set, is told what starts ("record", "live les 25% 1/2").
	Progress func(step string)

	// Target, when set, is a device agent (tcp://HOST:PORT or
	// usb://UDID:PORT) that records the trace and runs the points instead
	// of this machine (RunRemote). Model, Prompt and Lanes are then the
	// agent's own and must stay unset; DeviceFile is the agent's device
	// (e.g. from lessim calibrate --target).
	Target string
	// Token is the agent's token.
	Token string
	// Client tunes the connection to Target (timeouts, usbmuxd address).
	Client agent.Options
}

// Files written into Options.Out.
const (
	// TraceFile is the recorded trace (without --trace), in a subfolder so
	// that lessim report on Out reads only results rows.
	TraceFile   = "trace/trace.parquet"
	ResultsFile = "results.parquet" // results rows (sweep's schema)
	TableFile   = "table.txt"       // the text table
	PlotPrefix  = "predicted-vs-measured"
)

// Checked is what Check resolved: the model and each cache in bytes.
type Checked struct {
	Model      *devices.ModelSpec
	Device     *devices.Device
	CacheBytes []int64 // per Options.Caches
	Fit        []FitPoint
}

// FitPoint is one point of Options.Fit. With a target, CacheBytes is
// resolved once the agent's trace (and so its model) is known.
type FitPoint struct {
	Policy, Cache string
	CacheBytes    int64
}

func (p FitPoint) String() string { return p.Policy + " at " + p.Cache }

// Check reports every problem with the options before any work: unknown
// policies, caches smaller than one layer's top-k, a model that is not MoE,
// a device profile that does not load, an output folder that cannot be
// written. It creates nothing (Out is created when the run commits).
func (o *Options) Check() (*Checked, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Tokens < 1 {
		bad("tokens %d: want >= 1", o.Tokens)
	}
	if o.Repeats < 1 {
		bad("repeats %d: want >= 1", o.Repeats)
	}
	if len(o.Policies) == 0 {
		bad("policies: none given")
	}
	if len(o.Caches) == 0 {
		bad("caches: none given")
	}
	for _, p := range o.Policies {
		if err := policies.CheckName(p); err != nil {
			bad("%v", err)
		} else if err := policies.CheckLive(p); err != nil && o.Target == "" {
			bad("%v", err) // NB: an agent's engine may be the simulator, which runs them
		}
	}
	if dup := duplicate(o.Policies); dup != "" {
		bad("policy %q given twice", dup)
	}
	if dup := duplicate(o.Caches); dup != "" {
		bad("cache %q given twice", dup)
	}
	c := &Checked{}
	if o.DeviceFile == "" {
		bad("device file: missing (a profile from lessim calibrate)")
	} else if d, err := experiment.LoadDevice("", o.DeviceFile); err != nil {
		bad("device file: %w", err)
	} else {
		c.Device = d
	}
	traceOK := true
	if o.Trace != "" {
		if _, err := os.Stat(o.Trace); err != nil {
			bad("trace: %w", err)
			traceOK = false
		}
	}
	switch {
	case o.Target != "":
		if _, err := agent.ParseTarget(o.Target); err != nil {
			errs = append(errs, err)
		}
		if o.Model != "" || o.Prompt != "" || o.Lanes != 0 {
			bad("model, prompt and lanes: the agent's own with a target (leave them unset)")
		}
	case o.Model == "":
		bad("model: missing (a GGUF Mixture-of-Experts file)")
	default:
		errs = append(errs, o.checkLocal(c, traceOK)...)
		errs = append(errs, o.checkLanes(c)...)
	}
	for _, f := range o.Fit {
		pol, cache, ok := strings.Cut(f, ":")
		switch {
		case !ok:
			bad("fit %q: want POLICY:CACHE, e.g. ondemand:25%%", f)
		case policies.CheckName(pol) != nil:
			bad("fit %q: %v", f, policies.CheckName(pol))
		case o.Target != "":
			c.Fit = append(c.Fit, FitPoint{Policy: pol, Cache: cache}) // resolved against the recorded trace's model
		case c.Model != nil:
			if b, cerrs := resolveCaches(c.Model, []string{cache}); len(cerrs) > 0 {
				bad("fit %q: %w", f, cerrs[0])
			} else {
				c.Fit = append(c.Fit, FitPoint{Policy: pol, Cache: cache, CacheBytes: b[0]})
			}
		}
	}
	if dup := duplicate(o.Fit); dup != "" {
		bad("fit %q given twice", dup)
	}
	errs = append(errs, o.checkOutputs(c.Fit)...)
	if len(errs) == 0 && o.Trace != "" { // a reused trace must decode the live runs' tokens
		if err := checkTokens(*o, o.Trace); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkOut(o.Out); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return c, nil
}

// checkLocal checks what a validation on this machine adds: the lanes,
// the model (resolving c.Model and the caches against it) and a reused
// trace's model (when the trace exists: traceOK).
func (o *Options) checkLocal(c *Checked, traceOK bool) []error {
	var errs []error
	mc, err := record.CheckModel(o.Model)
	if err != nil {
		return append(errs, err)
	}
	mc.File.Close()
	c.Model = mc.Spec
	var cerrs []error
	c.CacheBytes, cerrs = resolveCaches(c.Model, o.Caches)
	errs = append(errs, cerrs...)
	if o.Trace != "" && traceOK {
		if err := checkTraceModel(o.Trace, c.Model, o.Model); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkLanes refuses live lanes out of range or other than the profile's
// flash.lanes (when the profile loaded): the simulated and the live runs
// must keep the same reads in flight to be compared.
func (o *Options) checkLanes(c *Checked) []error {
	if o.Lanes == 0 {
		return nil
	}
	if err := live.CheckLanes(o.Lanes); err != nil {
		return []error{err}
	}
	if c.Device != nil && o.Lanes != c.Device.Flash.Lanes {
		return []error{fmt.Errorf("lanes %d: the profile %s simulates %s in flight; the live runs must use the same (leave --lanes out to take the profile's)",
			o.Lanes, o.DeviceFile, plural.Count(c.Device.Flash.Lanes, "flash lane"))}
	}
	return nil
}

// MeasuredSpec is the run an engine is sent for policy at cache: a
// synthetic trace of tokens decode tokens (a live engine's model routes;
// the simulator agent simulates the default synthetic routing, which is
// what its record request returns), the simulated spec's layout and
// compute order (Spec), and the engine's own device and model (both
// absent). On this machine its host group names the model, the prompt, the
// profile's flash lanes (c.Device's) and 1 compute thread.
func (o *Options) MeasuredSpec(c *Checked, policy, cache string, tokens int) (json.RawMessage, error) {
	syn := experiment.DefaultSynthetic()
	syn.Tokens = tokens
	s := o.Spec("", policy, cache)
	s.Trace, s.Device, s.Prefill = experiment.Trace{Synthetic: &syn}, experiment.Device{}, false
	if o.Target == "" {
		s.Host = &experiment.Host{ModelFile: o.Model, Prompt: o.Prompt, Lanes: c.Device.Flash.Lanes, Threads: 1}
	}
	return json.Marshal(s)
}

// outputs are the files a validation may write under Out: the table, the
// results rows, the plots, the recorded trace (without Options.Trace), and
// with fit points each round's fit series and the fitted profile.
func (o *Options) outputs(fit []FitPoint) []string {
	out := []string{TableFile, ResultsFile, PlotPrefix + ".png", PlotPrefix + ".svg"}
	if o.Trace == "" {
		out = append(out, TraceFile)
	}
	if len(fit) > 0 {
		out = append(out, FitProfileFile)
	}
	for i := range out {
		out[i] = filepath.Join(o.Out, out[i])
	}
	for _, p := range fit {
		for r := range max(o.Repeats, 1) {
			out = append(out, fitSeriesPath(o.Out, p, r))
		}
	}
	return out
}

// checkOutputs refuses a validation that would overwrite one of its inputs
// (the model, the device profile, the trace), e.g. a --device-file that is
// Out/fit/fitted.yaml of an earlier run.
func (o *Options) checkOutputs(fit []FitPoint) []error {
	if o.Out == "" {
		return nil
	}
	var errs []error
	for _, f := range o.outputs(fit) {
		if err := atomicfile.CheckDistinct(f, o.Model, o.DeviceFile, o.Trace); err != nil {
			errs = append(errs, fmt.Errorf("out: %w", err))
		}
	}
	return errs
}

// resolveCaches turns each cache of caches into bytes of model m's experts,
// refusing one smaller than a layer's top-k.
func resolveCaches(m *devices.ModelSpec, caches []string) ([]int64, []error) {
	var errs []error
	var out []int64
	need := int64(m.TopK) * m.MaxExpertBytes()
	for _, s := range caches {
		b, err := live.ResolveCache(s, m)
		switch {
		case err != nil:
			errs = append(errs, err) // it names the cache
		case b < need:
			errs = append(errs, fmt.Errorf("cache %s (%s) is smaller than one layer's top-%d (%s): a token could not hold its experts",
				s, sim.FormatBytes(b), m.TopK, sim.FormatBytes(need)))
		}
		out = append(out, b)
	}
	return out, errs
}

func duplicate(s []string) string {
	for i, v := range s {
		if slices.Contains(s[:i], v) {
			return v
		}
	}
	return ""
}

// checkOut refuses an output folder that is missing, is not a folder or
// lies under a file, and proves that an existing one is writable (a probe
// file is created and removed). It creates nothing: the files are staged
// beside dir and moved into it at the end (inStage).
func checkOut(dir string) error {
	if dir == "" {
		return errors.New("out: missing (an output folder)")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("out: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("out: %s exists and is not a folder", dir)
	}
	if err := atomicfile.CheckFolder(dir); err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	return nil
}

// Spec is the simulated spec of one point: the trace file, the calibrated
// profile, the policy with its defaults, the cache, per-expert layout, the
// live engine's compute order (barrier: its top-k hook returns once every
// miss has loaded, then llama.cpp runs the layer's experts as one
// operation), and the prompt's prefill replayed first (the live run prefills
// through the same books, so its cache is warm when decode starts).
func (o *Options) Spec(trace, policy, cache string) experiment.Spec {
	return experiment.Spec{
		Version:     experiment.Version,
		Trace:       experiment.Trace{Path: trace},
		Device:      experiment.Device{File: o.DeviceFile},
		Policy:      experiment.Policy{Name: policy},
		Cache:       experiment.Cache{Size: cache},
		Layout:      experiment.DefaultLayout,
		CachedFirst: false,
		Barrier:     true,
		Prefill:     true,
	}
}
