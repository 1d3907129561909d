package agent

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

// DefaultCheckSpec is the run `lessim agent check` asks for unless told
// otherwise: short, with the fields every engine's spec has.
const DefaultCheckSpec = `{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 16}}}`

// DefaultCancelWithin is how soon a closed run must free the engine: time
// to finish the decode pass in progress, and no more.
const DefaultCancelWithin = 2 * time.Second

// CheckOptions configure a conformance check.
type CheckOptions struct {
	// Spec is a short run the agent's engine accepts (default
	// DefaultCheckSpec); it must last long enough (a few passes, a second or
	// more) for the busy probe.
	Spec json.RawMessage
	// Model, when set, is loaded first (and checked).
	Model string
	// Calibrate includes the calibrate request (it may take minutes on a device).
	Calibrate bool
	// CalibrateOptions are the calibrate request's engine-defined options
	// (nil for the engine's defaults).
	CalibrateOptions json.RawMessage
	// RecordTokens is the decode tokens of the record check (default 4).
	RecordTokens int
	// CancelWithin is how soon a closed run must free the engine (default
	// DefaultCancelWithin).
	CancelWithin time.Duration
	// Client are the client options (timeouts, usbmuxd address).
	Client Options
}

// Check outcomes.
const (
	CheckPass = "PASS"
	CheckFail = "FAIL"
	CheckSkip = "SKIP"
)

// CheckResult is one conformance check's outcome.
type CheckResult struct {
	Name    string
	Outcome string // CheckPass, CheckFail or CheckSkip
	Detail  string
	Err     error // the check's error (nil when it passed)
}

// infoCheck is the first check's name: when it fails, no other runs.
const infoCheck = "agent info"

// Unchecked reports whether r is a failed first check that says nothing
// about conformance: no connection, no answer, the token refused, or not a
// lessim agent at the target.
func (r CheckResult) Unchecked() bool {
	return r.Name == infoCheck && r.Outcome == CheckFail && slices.ContainsFunc([]error{ErrUnreachable, ErrSilent, ErrAuth, ErrNotAgent},
		func(e error) bool { return errors.Is(r.Err, e) })
}

// Check runs the conformance checks against the agent at target: its info
// and device facts; the documented answer to a wrong token, malformed
// requests, an oversize body and a slow client; load_model; an invalid
// spec; a run's stream against its result, and its per-token series (or
// their refusal); busy; cancel; record; calibrate. report (if set) gets each
// result as it is known. A check that cannot decide says SKIP and why.
func Check(ctx context.Context, target, token string, o CheckOptions, report func(CheckResult)) []CheckResult {
	if len(o.Spec) == 0 {
		o.Spec = json.RawMessage(DefaultCheckSpec)
	}
	o.CancelWithin, o.RecordTokens = cmp.Or(o.CancelWithin, DefaultCancelWithin), cmp.Or(o.RecordTokens, 4)
	o.Client = o.Client.withDefaults()
	k := &checker{token: token, o: o}
	var out []CheckResult
	add := func(name string, f func(context.Context) (string, error)) {
		r := CheckResult{Name: name, Outcome: CheckPass}
		detail, err := f(ctx)
		var skip skipError
		switch {
		case errors.As(err, &skip):
			r.Outcome, detail = CheckSkip, string(skip)
		case err != nil:
			r.Outcome, detail = CheckFail, err.Error()
		}
		r.Detail, r.Err = detail, err
		out = append(out, r)
		if report != nil {
			report(r)
		}
	}
	add(infoCheck, func(ctx context.Context) (string, error) {
		c, err := DialWith(ctx, target, token, o.Client)
		if err != nil {
			return "", err
		}
		k.c, k.info = c, c.Info()
		if !slices.Contains(k.info.Capabilities, CapRun) {
			return "", fmt.Errorf("capability %s missing from %v", CapRun, k.info.Capabilities)
		}
		return fmt.Sprintf("%s, capabilities %v", k.info.Agent, k.info.Capabilities), nil
	})
	if k.c == nil {
		return out // nothing else can work
	}
	defer k.c.Close()
	bearer, other := "Bearer "+token, "Bearer "+strings.Repeat("0", 2*TokenBytes)
	if token == other[7:] {
		other = "Bearer " + strings.Repeat("1", 2*TokenBytes)
	}
	add("device facts", k.facts)
	add("wrong or missing token refused", k.refusals(CodeAuth, []probe{{"GET", PathAgent, "", ""}, {"GET", PathAgent, other, ""},
		{"POST", PathRun, other, k.runBody()}, {"POST", PathRun, "Basic " + token, k.runBody()}, {"POST", PathRun, bearer + "0", k.runBody()}}))
	add("malformed requests refused", k.refusals(CodeBadRequest, []probe{{"POST", PathRun, bearer, "this is not JSON"},
		{"POST", PathRun, bearer, `{"spec": {}, "shell": "rm -rf /"}`}, {"POST", PathRun, bearer, `{}`}, {"POST", PathRun, bearer, `{"spec": [1]}`},
		{"POST", PathRecord, bearer, `{"tokens": 0}`}, {"POST", PathLoadModel, bearer, `{"model": ""}`}, {"GET", PathRun, bearer, ""}}))
	add("unknown path refused", k.refusals(CodeNotFound, []probe{{"GET", "/v1/exec", bearer, ""}, {"POST", "/", bearer, "{}"}}))
	add("oversize body refused", k.oversize)
	add("slow client cut", k.slowClient)
	if o.Model != "" {
		add("load_model", k.loadModel)
	}
	add("unknown model refused", k.refusals(CodeInvalidSpec, []probe{{"POST", PathLoadModel, bearer, `{"model": "no-such-model-for-lessim-check"}`}}))
	add("invalid spec refused", k.refusals(CodeInvalidSpec, []probe{{"POST", PathRun, bearer, k.badSpec()}}))
	add("run: stream and result", k.run)
	add("run: per-token series", k.series)
	add("busy: a second request during a run", k.busy)
	add("cancel: closing a run frees the engine", k.cancel)
	add("record: routing trace", k.record)
	if o.Calibrate {
		add("calibrate", k.calibrate)
	}
	return out
}

// skipError marks a check that could not decide.
type skipError string

func (s skipError) Error() string { return string(s) }

type checker struct {
	token string
	o     CheckOptions
	c     *Client
	info  Info
}

func (k *checker) facts(context.Context) (string, error) {
	d := k.info.Device
	if d.Model == "" || d.OS == "" || d.Engine == "" || d.EngineVersion == "" {
		return "", fmt.Errorf("model, os, engine and engine_version must be set: %+v", d)
	}
	if d.PageBytes < 4096 {
		return "", fmt.Errorf("page_bytes %d below 4 KiB", d.PageBytes)
	}
	if b, _ := devices.BoundOf("memory.ram"); !b.Contains(float64(d.RAMBytes)) {
		return "", fmt.Errorf("ram_bytes %d outside %s: a unit mistake?", d.RAMBytes, b.RangeText())
	}
	return fmt.Sprintf("%s %s, %s, %s RAM, %s pages, %s %s", d.Kind, d.Model, d.OS, sim.FormatBytes(d.RAMBytes), sim.FormatBytes(d.PageBytes), d.Engine, d.EngineVersion), nil
}

func (k *checker) runBody() string {
	b, _ := json.Marshal(Run{Spec: k.o.Spec})
	return string(b)
}

// badSpec is the check's spec with a field no spec has: engines refuse
// what they would ignore.
func (k *checker) badSpec() string {
	var m map[string]any
	json.Unmarshal(k.o.Spec, &m)
	if m == nil {
		m = map[string]any{}
	}
	m["no_such_field_lessim_check"] = true
	b, _ := json.Marshal(map[string]any{"spec": m})
	return string(b)
}

// probe is a request as sent: auth is the whole Authorization header ("" none).
type probe struct{ method, path, auth, body string }

// send sends p (its body, or size bytes of which only the start arrives
// when size > 0) and returns the answer's status and, for an error, its
// code.
func (k *checker) send(ctx context.Context, p probe, size int64) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, k.o.Client.Silence)
	defer cancel()
	body := io.Reader(strings.NewReader(p.body))
	if size > 0 { // the rest never comes: the agent must answer from the headers
		body = io.MultiReader(body, stalled{ctx})
	}
	req, err := http.NewRequestWithContext(ctx, p.method, k.c.base+p.path, body)
	if err != nil {
		return 0, "", err
	}
	req.ContentLength = max(size, int64(len(p.body)))
	if p.auth != "" {
		req.Header.Set("Authorization", p.auth)
	}
	resp, err := k.c.hc.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", p.method, p.path, k.c.transportErr(ctx, err))
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, maxLineBytes)
	for sc.Scan() {
		var l Line
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Error != nil {
			return resp.StatusCode, l.Error.Code, nil
		}
	}
	return resp.StatusCode, "", sc.Err()
}

// stalled is a body that sends nothing until its context ends.
type stalled struct{ ctx context.Context }

func (s stalled) Read([]byte) (int, error) { <-s.ctx.Done(); return 0, s.ctx.Err() }

// refusals sends each probe and expects error code with its status (or,
// for an engine's refusal after a heartbeat, 200 and the error line).
func (k *checker) refusals(code string, ps []probe) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		var status int
		for _, p := range ps {
			err := k.whenFree(func() error {
				st, got, err := k.send(ctx, p, 0)
				status = st
				switch want := statusOf[code]; {
				case err != nil:
					return err
				case got == CodeBusy && code != CodeBusy:
					return ErrBusy
				case got != code || st != want && !(p.method == "GET" && p.path == PathRun && st == 405) && !(code == CodeInvalidSpec && st == 200):
					return fmt.Errorf("%s %s with %q: status %d, error %q; want %d, error %s", p.method, p.path, clip(p.body, 60), st, got, want, code)
				}
				return nil
			})
			if err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("%d requests: status %d, error %s", len(ps), status, code), nil
	}
}

// oversize announces a body one byte above the agent's limit and sends one
// byte of it: the agent must refuse from the headers.
func (k *checker) oversize(ctx context.Context) (string, error) {
	n := k.info.Limits.MaxBodyBytes + 1
	st, code, err := k.send(ctx, probe{"POST", PathRun, "Bearer " + k.token, "{"}, n)
	if err == nil && (st != statusOf[CodeTooLarge] || code != CodeTooLarge) {
		err = fmt.Errorf("a body of %d bytes announced: status %d, error %q; want 413, error %s", n, st, code, CodeTooLarge)
	}
	return fmt.Sprintf("status 413, error too_large (announced %d bytes, sent 1)", n), err
}

// slowClient sends half a request's headers and expects the connection
// closed at the agent's header timeout.
func (k *checker) slowClient(ctx context.Context) (string, error) {
	limit := k.info.Limits.HeaderTimeout
	if limit > 30*time.Second {
		return "", skipError(fmt.Sprintf("header timeout %v is too long to wait for", limit))
	}
	dctx, cancel := context.WithTimeout(ctx, k.o.Client.DialTimeout)
	defer cancel()
	nc, err := k.c.target.dial(dctx, k.o.Client.Usbmux)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	defer nc.Close()
	start := time.Now()
	if _, err := nc.Write([]byte("POST " + PathRun + " HTTP/1.1\r\nHost: agent\r\n")); err != nil {
		return "", err
	}
	nc.SetReadDeadline(start.Add(limit + 5*time.Second))
	if _, err := io.Copy(io.Discard, nc); errors.Is(err, os.ErrDeadlineExceeded) {
		return "", fmt.Errorf("the connection is still open %v after half a request (header timeout %v)", time.Since(start).Round(time.Millisecond), limit)
	}
	return fmt.Sprintf("closed after %v (header timeout %v)", time.Since(start).Round(time.Millisecond), limit), nil
}

// whenFree calls f until it is not refused as busy (a previous check's
// cancelled request may still be stopping), for at most the silence limit.
func (k *checker) whenFree(f func() error) error {
	deadline := time.Now().Add(k.o.Client.Silence)
	for {
		err := f()
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (k *checker) loadModel(ctx context.Context) (string, error) {
	var info ModelInfo
	err := k.whenFree(func() (err error) { info, err = k.c.LoadModel(ctx, k.o.Model); return err })
	if err != nil {
		return "", err
	}
	if info.Layers < 1 || info.Experts < 2 || info.TopK < 1 || info.TopK > info.Experts || info.TotalExpertBytes <= 0 {
		return "", fmt.Errorf("implausible model info %+v", info)
	}
	return fmt.Sprintf("%s: %d MoE layers × %d experts, top-%d, %s of experts", info.Name, info.Layers, info.Experts, info.TopK, sim.FormatBytes(info.TotalExpertBytes)), nil
}

func (k *checker) run(ctx context.Context) (string, error) {
	var samples []TokenSample
	var res *sim.Result
	start := time.Now()
	err := k.whenFree(func() (err error) {
		samples = samples[:0]
		res, err = k.c.Run(ctx, k.o.Spec, func(s TokenSample) error { samples = append(samples, s); return nil })
		return err
	})
	if err == nil {
		err = CheckRun(samples, res)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d passes, %d tokens, %.2f tok/s, hit rate %.3f, %d samples valid, %v wall", res.Passes, res.Tokens, res.TokensPerSec, res.HitRate, len(samples), time.Since(start).Round(time.Millisecond)), nil
}

// series: an agent announcing CapSeries sends every series field on every
// token of a run that asks, consistent with the result; one that does not
// refuses such a run with invalid_spec.
func (k *checker) series(ctx context.Context) (string, error) {
	if k.c.SeriesSupported() != nil {
		err := k.whenFree(func() error { _, err := k.c.run(ctx, Run{Spec: k.o.Spec, Series: true}, nil); return err })
		if !errors.Is(err, ErrRefused) {
			return "", fmt.Errorf("a run asking for its series from an agent without %s: got %v, want error %s", CapSeries, err, CodeInvalidSpec)
		}
		return "not announced: error " + CodeInvalidSpec, nil
	}
	var res *sim.Result
	var samples []TokenSample
	err := k.whenFree(func() (err error) { res, samples, err = k.c.RunSeries(ctx, k.o.Spec); return err })
	if err == nil {
		err = CheckRun(samples, res)
	}
	if err != nil {
		return "", err
	}
	var faults int64
	for _, s := range samples {
		faults += *s.MajorFaults
	}
	return fmt.Sprintf("%d passes, each with every series field; %d major faults", len(samples), faults), nil
}

// errStop ends a probe's run at its first token.
var errStop = errors.New("stop")

// busy: a run requested while another run streams is answered busy. A
// second run accepted is a fault when the first streams on after it (at
// least 3 more passes); otherwise the first run may have ended before the
// probe reached the agent, and the attempt is repeated, 3 times at most.
func (k *checker) busy(ctx context.Context) (string, error) {
	for range 3 {
		var passes atomic.Int64
		first := make(chan struct{})
		ended := make(chan error, 1)
		a, err := DialWith(ctx, k.c.target.String(), k.token, k.o.Client) // a new connection each, for agents that serve each apart
		if err != nil {
			return "", err
		}
		defer a.Close()
		go func() {
			ended <- k.whenFree(func() error {
				_, err := a.Run(ctx, k.o.Spec, func(TokenSample) error {
					if passes.Add(1) == 1 {
						close(first)
					}
					return nil
				})
				return err
			})
		}()
		select {
		case <-first:
		case err := <-ended:
			return "", fmt.Errorf("the check's run: %v", cmp.Or(err, errors.New("no token")))
		}
		at := int64(-1)
		b, err := DialWith(ctx, k.c.target.String(), k.token, k.o.Client)
		if err == nil {
			_, err = b.Run(ctx, k.o.Spec, func(TokenSample) error { at = passes.Load(); return errStop })
			b.Close()
		}
		var re *RemoteError
		if errors.As(err, &re) && re.Code == CodeBusy {
			<-ended
			return "409 busy: " + re.Message, nil
		}
		if err := <-ended; err != nil {
			return "", fmt.Errorf("the check's run: %v", err)
		}
		switch {
		case at < 0:
			return "", fmt.Errorf("a second run during a run: %v, want busy", err)
		case passes.Load()-at >= 3:
			return "", fmt.Errorf("a second run was accepted while the first streamed on (%d more passes): want busy", passes.Load()-at)
		}
	}
	return "", skipError("the run ended before the second run reached the agent, 3 times: give --spec a longer run")
}

// cancel: a run closed at its first token frees the engine within
// CancelWithin (the time until a new run is accepted, less the polling).
func (k *checker) cancel(ctx context.Context) (string, error) {
	var closed time.Time
	err := k.whenFree(func() error {
		_, err := k.c.Run(ctx, k.o.Spec, func(TokenSample) error { closed = time.Now(); return errStop })
		return err
	})
	if !errors.Is(err, errStop) {
		return "", fmt.Errorf("the check's run: %v", err)
	}
	for {
		sent := time.Now()
		_, err := k.c.Run(ctx, k.o.Spec, func(TokenSample) error { return errStop })
		switch took := sent.Sub(closed); {
		case errors.Is(err, errStop) && took <= k.o.CancelWithin:
			return fmt.Sprintf("a new run was accepted %v after the first was closed", took.Round(time.Millisecond)), nil
		case errors.Is(err, errStop) || errors.Is(err, ErrBusy) && time.Since(closed) > k.o.CancelWithin:
			return "", fmt.Errorf("the engine was still busy %v after its run was closed, more than %v: it does not stop when cancelled", took.Round(time.Millisecond), k.o.CancelWithin)
		case !errors.Is(err, ErrBusy):
			return "", err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// record asks for a short routing trace and checks it reads back, has the
// tokens asked for and describes a MoE model.
func (k *checker) record(ctx context.Context) (string, error) {
	if !slices.Contains(k.info.Capabilities, CapRecord) {
		return "", skipError(fmt.Sprintf("the agent does not announce %s (capabilities %v)", CapRecord, k.info.Capabilities))
	}
	var t *RecordedTrace
	if err := k.whenFree(func() (err error) { t, err = k.c.Record(ctx, k.o.RecordTokens); return err }); err != nil {
		return "", err
	}
	m := t.Meta.Model
	if len(m.Layers) == 0 || m.TopK < 1 || m.Experts < m.TopK {
		return "", fmt.Errorf("the trace's model %q: %d MoE layers, top-%d of %d experts", m.Name, len(m.Layers), m.TopK, m.Experts)
	}
	return fmt.Sprintf("%d bytes: %d prefill + %d decode tokens of %s (%d MoE layers, top-%d of %d)",
		len(t.Parquet), t.PrefillTokens, t.DecodeTokens, m.Name, len(m.Layers), m.TopK, m.Experts), nil
}

func (k *checker) calibrate(ctx context.Context) (string, error) {
	if !slices.Contains(k.info.Capabilities, CapCalibrate) {
		return "", skipError(fmt.Sprintf("the agent does not announce %s (capabilities %v)", CapCalibrate, k.info.Capabilities))
	}
	var y []byte
	if err := k.whenFree(func() (err error) { y, err = k.c.Calibrate(ctx, k.o.CalibrateOptions); return err }); err != nil {
		return "", err
	}
	p, err := devices.ParseProfile(y, "calibration")
	if err != nil {
		return "", err
	}
	d, err := p.Device()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("profile %q: %s RAM, %d flash lanes", p.Name, sim.FormatBytes(d.RAMBytes), d.Flash.Lanes), nil
}

// CheckRun checks a run's samples against each other and its Result: units
// and ranges, passes in order without overlap, counts and sums that agree,
// ratios that match their counters.
func CheckRun(samples []TokenSample, r *sim.Result) error {
	if r == nil {
		return errors.New("no result")
	}
	if len(samples) == 0 || int64(len(samples)) != r.Passes {
		return fmt.Errorf("%d samples for %d passes", len(samples), r.Passes)
	}
	var tokens, sumTime, sumStall int64
	var end int64
	for i, s := range samples {
		if err := s.Validate(); err != nil {
			return err
		}
		if s.Pass != int64(i) {
			return fmt.Errorf("sample %d is pass %d", i, s.Pass)
		}
		if s.StartNS < end {
			return fmt.Errorf("pass %d starts at %d ns, before pass %d ended (%d ns)", i, s.StartNS, i-1, end)
		}
		end = s.StartNS + s.TimeNS
		tokens += int64(s.Tokens)
		sumTime += s.TimeNS
		sumStall += s.StallNS
	}
	if tokens != r.Tokens {
		return fmt.Errorf("samples carry %d tokens, the result %d", tokens, r.Tokens)
	}
	if samples[0].StartNS != 0 {
		return fmt.Errorf("the first pass starts at %d ns, not 0 (start_ns counts from the first pass)", samples[0].StartNS)
	}
	if slack := r.TimeNS/100 + int64(time.Millisecond); end < r.TimeNS-slack || end > r.TimeNS+slack || sumTime > end {
		return fmt.Errorf("the last pass ends at %d ns (passes take %d ns in all); the result's time_ns is %d: they must agree within 1%% + 1 ms",
			end, sumTime, r.TimeNS)
	}
	if sumStall > r.StallNS+r.StallNS/100+int64(time.Microsecond) {
		return fmt.Errorf("passes stall %d ns, above the result's stall_ns %d", sumStall, r.StallNS)
	}
	if r.TimeNS <= 0 || r.StallNS < 0 || r.StallNS > r.TimeNS || r.ComputeNS < 0 || r.FlashBytes < 0 || r.FlashReads < 0 || r.PeakResidentBytes < 0 {
		return fmt.Errorf("result: time_ns %d, stall_ns %d, compute_ns %d, flash_bytes %d, flash_reads %d, peak_resident_bytes %d out of range",
			r.TimeNS, r.StallNS, r.ComputeNS, r.FlashBytes, r.FlashReads, r.PeakResidentBytes)
	}
	if r.Hits < 0 || r.InflightHits < 0 || r.Misses < 0 || r.Hits+r.InflightHits+r.Misses != r.Uses {
		return fmt.Errorf("result: hits %d + inflight_hits %d + misses %d != uses %d", r.Hits, r.InflightHits, r.Misses, r.Uses)
	}
	if !(r.LatencyP50NS <= r.LatencyP90NS && r.LatencyP90NS <= r.LatencyP99NS && r.LatencyP99NS <= r.LatencyMaxNS && r.LatencyMaxNS <= r.TimeNS) {
		return fmt.Errorf("result: latency percentiles %d ≤ %d ≤ %d ≤ %d ≤ time_ns %d do not hold", r.LatencyP50NS, r.LatencyP90NS, r.LatencyP99NS, r.LatencyMaxNS, r.TimeNS)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"tokens_per_sec", r.TokensPerSec, float64(r.Tokens) * 1e9 / float64(r.TimeNS)},
		{"hit_rate", r.HitRate, ratio(r.Hits, r.Uses)},
		{"accepted_per_pass", r.AcceptedPerPass, ratio(r.Tokens, r.Passes)},
		{"flash_bytes_per_token", r.FlashBytesPerToken, ratio(r.FlashBytes, r.Tokens)},
	} {
		if math.IsNaN(f.got) || math.Abs(f.got-f.want) > 1e-6*math.Max(1, math.Abs(f.want)) {
			return fmt.Errorf("result: %s %g, its counters give %g", f.name, f.got, f.want)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"hit_rate", r.HitRate}, {"prefetch_recall", r.PrefetchRecall}, {"prefetch_precision", r.PrefetchPrecision}} {
		if f.v < 0 || f.v > 1 {
			return fmt.Errorf("result: %s %g outside [0,1]", f.name, f.v)
		}
	}
	return nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
