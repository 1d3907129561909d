package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// Options configures Run.
type Options struct {
	Model      string // the GGUF Mixture-of-Experts model run live and recorded
	DeviceFile string // the calibrated profile of the measuring device (lessim calibrate)
	// Trace reuses a recorded trace of the same model, prompt and token
	// count; "" records one into Out (TraceFile).
	Trace string
	// Policies and Caches span the points (policy-major order). A cache is
	// a size ("64MiB") or a percentage of all expert bytes ("25%").
	Policies []string
	Caches   []string
	Tokens   int    // decode tokens recorded and measured per run
	Repeats  int    // live runs per point (≥ 1)
	Prompt   string // the text prefilled before decoding; "" is live.DefaultPrompt
	// Lanes is the live driver's I/O lanes: 0 takes the profile's
	// flash.lanes, so that simulated and live runs keep the same reads in
	// flight; another value is refused.
	Lanes int
	// Grid, when set, crosses every policy and cache with these live
	// configurations, each simulated with its lanes and threads. Empty: one
	// configuration, the profile's lanes and 1 thread.
	Grid []Host
	// Fit lists points as "POLICY:CACHE" (e.g. "les:25%"): each runs live
	// once more per round with its per-token series, the profile's compute,
	// load-cost and flash-scale parameters are fitted to all of them
	// (calibrate --from-run) and the points are simulated with the fitted
	// profile. None simulates with DeviceFile as it is.
	Fit []string
	// Out is the output folder, written through a staging folder
	// (Report.Stage): a failed or interrupted run leaves it as it was.
	Out      string
	Version  string            // lessim's version, written into the results rows
	Progress func(step string) // when set, told what starts ("record", "live les 25% 1/2")
	// Target, when set, is the device agent that open dials (Run): Model,
	// Prompt, Lanes and Grid are then the agent's own and must stay unset;
	// DeviceFile is the agent's device (e.g. from lessim calibrate --target).
	Target string
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

// Checked is what Check resolved: the model, the device and each cache in bytes.
type Checked struct {
	Model      *devices.ModelSpec
	Device     *devices.Device
	CacheBytes []int64 // per Options.Caches
	Fit        []FitPoint
}

// FitPoint is one point of Options.Fit (with a target, CacheBytes is
// resolved once the agent's trace is known).
type FitPoint struct {
	Policy, Cache string
	CacheBytes    int64
	Host          Host // its live configuration in a grid (Options.Grid)
}

// String names p as reports.VsPoint names the point it was fitted on.
func (p FitPoint) String() string {
	return reports.VsPoint{Policy: p.Policy, Cache: p.Cache, Lanes: p.Host.Lanes, Threads: p.Host.Threads}.String()
}

// Host is a grid point's I/O lanes and compute threads (zero: the default).
type Host struct {
	Lanes, Threads int
}

// suffix names h after a point ("", or " L2 T1").
func (h Host) suffix() string { return reports.HostSuffix(h.Lanes, h.Threads) }

// ParseGrid is Options.Grid from comma-separated lanes and threads (both
// or neither, each 1..256): every lanes × threads, lanes-major.
func ParseGrid(lanes, threads string) ([]Host, error) {
	if lanes == "" && threads == "" {
		return nil, nil
	}
	if lanes == "" || threads == "" {
		return nil, errors.New("grid: give --grid-lanes and --grid-threads together")
	}
	ls, err := gridList("lanes", lanes)
	if err != nil {
		return nil, err
	}
	ts, err := gridList("threads", threads)
	if err != nil {
		return nil, err
	}
	var out []Host
	for _, l := range ls {
		for _, t := range ts {
			out = append(out, Host{l, t})
		}
	}
	return out, nil
}

func gridList(what, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("grid %s %q: want whole numbers 1..256, comma-separated", what, s)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("grid %s %q: %d given twice", what, s, n)
		}
		out = append(out, n)
	}
	return out, nil
}

func (o *Options) hosts() []Host {
	if len(o.Grid) == 0 {
		return []Host{{}}
	}
	return o.Grid
}

// hostDevice is the profile at file, with h's lanes and threads inline
// for a grid point.
func hostDevice(file string, h Host) (experiment.Device, error) {
	if h == (Host{}) {
		return experiment.Device{File: file}, nil
	}
	d, err := experiment.LoadDevice("", file)
	if err != nil {
		return experiment.Device{}, err
	}
	c := *d
	c.Flash.Lanes, c.ComputeThreads = h.Lanes, h.Threads
	return experiment.Device{Profile: &c}, nil
}

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
		if o.Model != "" || o.Prompt != "" || o.Lanes != 0 || len(o.Grid) > 0 {
			bad("model, prompt and lanes: the agent's own with a target (leave them unset)")
		}
	case o.Model == "":
		bad("model: missing (a GGUF Mixture-of-Experts file)")
	case len(o.Grid) > 0 && o.Lanes != 0:
		bad("lanes %d with a grid: the grid states each point's lanes", o.Lanes)
	default:
		errs = append(errs, o.checkLocal(c, traceOK)...)
		errs = append(errs, o.checkLanes(c)...)
	}
	for _, f := range o.Fit {
		pol, cache, ok := strings.Cut(f, ":")
		var h Host
		if cc, rest, grid := strings.Cut(cache, ":"); grid {
			cache = cc
			if n, err := fmt.Sscanf(rest, "%d:%d", &h.Lanes, &h.Threads); n != 2 || err != nil || !slices.Contains(o.Grid, h) {
				bad("fit %q: want POLICY:CACHE:LANES:THREADS with lanes and threads of the grid", f)
				continue
			}
		} else if len(o.Grid) > 0 {
			bad("fit %q: with a grid of lanes and threads, want POLICY:CACHE:LANES:THREADS, e.g. ondemand:15%%:2:1", f)
			continue
		}
		switch {
		case !ok:
			bad("fit %q: want POLICY:CACHE, e.g. ondemand:25%%", f)
		case policies.CheckName(pol) != nil:
			bad("fit %q: %v", f, policies.CheckName(pol))
		case o.Target != "":
			c.Fit = append(c.Fit, FitPoint{Policy: pol, Cache: cache, Host: h}) // resolved against the recorded trace's model
		case c.Model != nil:
			if b, cerrs := resolveCaches(c.Model, []string{cache}); len(cerrs) > 0 {
				bad("fit %q: %w", f, cerrs[0])
			} else {
				c.Fit = append(c.Fit, FitPoint{Policy: pol, Cache: cache, CacheBytes: b[0], Host: h})
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

// checkLocal checks the model (resolving c.Model and the caches against
// it) and a reused trace's model (when the trace exists: traceOK).
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

// checkTraceModel refuses a trace that is not of model m, the GGUF at path:
// a trace of another model would simulate other routing.
func checkTraceModel(trace string, m *devices.ModelSpec, path string) error {
	switch why, err := traces.ModelDiffers(trace, m, path); {
	case err != nil:
		return fmt.Errorf("trace: %w", err)
	case why != "":
		return fmt.Errorf("trace %s is not of the model %s: %s (record it with this model, or leave --trace out)", trace, path, why)
	}
	return nil
}

// checkLanes refuses live lanes out of range or other than the profile's.
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
// a simulator agent simulates the routing its record returns), Spec's
// layout and compute order, and the engine's own device and model. On
// this machine its host group names the model, the prompt, and h's lanes
// and threads (by default the profile's flash lanes and 1 thread).
func (o *Options) MeasuredSpec(c *Checked, policy, cache string, h Host, tokens int) (json.RawMessage, error) {
	syn := experiment.DefaultSynthetic()
	syn.Tokens = tokens
	s := o.Spec("", policy, cache)
	s.Trace, s.Device, s.Prefill = experiment.Trace{Synthetic: &syn}, experiment.Device{}, false
	if o.Target == "" {
		if h == (Host{}) {
			h = Host{c.Device.Flash.Lanes, 1}
		}
		s.Host = &experiment.Host{ModelFile: o.Model, Prompt: o.Prompt, Lanes: h.Lanes, Threads: h.Threads}
	}
	return json.Marshal(s)
}

// outputs are the files a validation may write under Out.
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
// (e.g. a --device-file that is Out/fit/fitted.yaml of an earlier run).
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

// resolveCaches turns caches into bytes of m's experts, refusing one
// smaller than a layer's top-k.
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

// checkOut refuses an output folder that is not given or not a folder,
// and proves an existing one writable. It creates nothing (see inStage).
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

// Spec is the simulated spec of one point: per-expert layout, the live
// engine's compute order (barrier: its top-k hook returns once every miss
// has loaded, then llama.cpp runs the layer's experts as one operation),
// and the prompt's prefill replayed first (the live run prefills through
// the same books, so its cache is warm when decode starts).
func (o *Options) Spec(trace, policy, cache string) experiment.Spec {
	return experiment.Spec{
		Version: experiment.Version, Trace: experiment.Trace{Path: trace}, Device: experiment.Device{File: o.DeviceFile},
		Policy: experiment.Policy{Name: policy}, Cache: experiment.Cache{Size: cache},
		Layout: experiment.DefaultLayout, Barrier: true, Prefill: true,
	}
}
