package agent

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

// DefaultCheckSpec is the run `lessim agent check` asks for by default.
const DefaultCheckSpec = `{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 16}}}`

// DefaultCancelWithin is how soon a closed run must free the engine.
const DefaultCancelWithin = 2 * time.Second

// CheckOptions configure a conformance check; zero fields take defaults.
type CheckOptions struct {
	Spec             json.RawMessage // a run the engine accepts (DefaultCheckSpec), long enough (a second or more) for the busy probe
	Model            string          // loaded first, and checked, when set
	Calibrate        bool            // check calibrate too (it may take minutes on a device)
	CalibrateOptions json.RawMessage // calibrate's engine-defined options (nil: the engine's defaults)
	CancelWithin     time.Duration   // how soon a closed run must free the engine (DefaultCancelWithin)
	Client           Options         // timeouts, usbmuxd address
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
// about conformance (no connection or answer, the token refused, no agent).
func (r CheckResult) Unchecked() bool {
	return r.Name == infoCheck && r.Outcome == CheckFail && slices.ContainsFunc([]error{ErrUnreachable, ErrSilent, ErrAuth, ErrNotAgent},
		func(e error) bool { return errors.Is(r.Err, e) })
}

// Check runs the conformance checks against the agent at target, calling
// report (if set) with each result as it is known.
func Check(ctx context.Context, target, token string, o CheckOptions, report func(CheckResult)) []CheckResult {
	if len(o.Spec) == 0 {
		o.Spec = json.RawMessage(DefaultCheckSpec)
	}
	o.CancelWithin, o.Client = cmp.Or(o.CancelWithin, DefaultCancelWithin), o.Client.withDefaults()
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
		if out = append(out, r); report != nil {
			report(r)
		}
	}
	add(infoCheck, func(ctx context.Context) (string, error) {
		c, err := DialWith(ctx, target, token, o.Client)
		if err != nil {
			return "", err
		}
		k.c, k.info = c, c.Info()
		d := k.info.Device
		switch b, _ := devices.BoundOf("memory.ram"); {
		case !slices.Contains(k.info.Capabilities, CapRun):
			return "", fmt.Errorf("capability %s missing from %v", CapRun, k.info.Capabilities)
		case d.Model == "" || d.OS == "" || d.Engine == "" || d.EngineVersion == "" || d.PageBytes < 4096:
			return "", fmt.Errorf("device: model, os, engine and engine_version must be set, page_bytes at least 4 KiB: %+v", d)
		case !b.Contains(float64(d.RAMBytes)):
			return "", fmt.Errorf("ram_bytes %d outside %s: a unit mistake?", d.RAMBytes, b.RangeText())
		}
		return fmt.Sprintf("%s, capabilities %v; %s %s, %s, %s RAM, %s pages, %s %s", k.info.Agent, k.info.Capabilities,
			d.Kind, d.Model, d.OS, sim.FormatBytes(d.RAMBytes), sim.FormatBytes(d.PageBytes), d.Engine, d.EngineVersion), nil
	})
	if k.c == nil {
		return out // nothing else can work
	}
	defer k.c.Close()
	bearer, other := "Bearer "+token, "Bearer "+strings.Repeat("0", 2*TokenBytes)
	if bearer == other {
		other = "Bearer " + strings.Repeat("1", 2*TokenBytes)
	}
	run, _ := json.Marshal(Run{Spec: o.Spec})
	var bad map[string]any // the spec with a field no spec has: engines refuse what they would ignore
	if json.Unmarshal(o.Spec, &bad); bad == nil {
		bad = map[string]any{}
	}
	bad["no_such_field_lessim_check"] = true
	badRun, _ := json.Marshal(map[string]any{"spec": bad})
	add("wrong or missing token refused", k.refusals(CodeAuth, probe{"GET", PathAgent, "", "", 0, 0}, probe{"GET", PathAgent, other, "", 0, 0},
		probe{"POST", PathRun, other, string(run), 0, 0}, probe{"POST", PathRun, "Basic " + token, string(run), 0, 0}, probe{"POST", PathRun, bearer + "0", string(run), 0, 0}))
	add("malformed requests refused", k.refusals(CodeBadRequest, probe{"POST", PathRun, bearer, "this is not JSON", 0, 0},
		probe{"POST", PathRun, bearer, `{"spec": {}, "shell": "rm -rf /"}`, 0, 0}, probe{"POST", PathRun, bearer, `{}`, 0, 0},
		probe{"POST", PathRun, bearer, `{"spec": [1]}`, 0, 0}, probe{"POST", PathRecord, bearer, `{"tokens": 0}`, 0, 0},
		probe{"POST", PathLoadModel, bearer, `{"model": ""}`, 0, 0}, probe{"GET", PathRun, bearer, "", 0, http.StatusMethodNotAllowed}))
	add("unknown path refused", k.refusals(CodeNotFound, probe{"GET", "/v1/exec", bearer, "", 0, 0}, probe{"POST", "/", bearer, "{}", 0, 0}))
	// Announced one byte above the limit, sent one byte: refused from the headers.
	add("oversize body refused", k.refusals(CodeTooLarge, probe{"POST", PathRun, bearer, "{", k.info.Limits.MaxBodyBytes + 1, 0}))
	add("slow client cut", k.slowClient)
	if o.Model != "" {
		add("load_model", k.loadModel)
	}
	add("unknown model refused", k.refusals(CodeInvalidSpec, probe{"POST", PathLoadModel, bearer, `{"model": "no-such-model-for-lessim-check"}`, 0, 0}))
	add("invalid spec refused", k.refusals(CodeInvalidSpec, probe{"POST", PathRun, bearer, string(badRun), 0, 0}))
	add("run: stream and result", k.run(false))
	if slices.Contains(k.info.Capabilities, CapSeries) {
		add("run: per-token series", k.run(true))
	} else {
		series, _ := json.Marshal(Run{Spec: o.Spec, Series: true})
		add("run: per-token series refused", k.refusals(CodeInvalidSpec, probe{"POST", PathRun, bearer, string(series), 0, 0}))
	}
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

// probe is a request as sent (auth: the Authorization header; size above
// the body's: announced, never sent) and the status expected (0: the code's).
type probe struct {
	method, path, auth, body string
	size                     int64
	status                   int
}

// refusals sends each probe and expects error code with its status (or,
// for an engine's refusal after a heartbeat, 200 and the error line).
func (k *checker) refusals(code string, ps ...probe) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		var statuses []int
		for _, p := range ps {
			err := k.whenFree(func() error {
				st, got, err := k.send(ctx, p)
				switch statuses = append(statuses, st); {
				case err != nil:
					return err
				case got == CodeBusy && code != CodeBusy:
					return ErrBusy
				case got != code || st != cmp.Or(p.status, statusOf[code]) && !(code == CodeInvalidSpec && st == 200):
					return fmt.Errorf("%s %s with %q: status %d, error %q; want %d, error %s", p.method, p.path, clip(p.body, 60), st, got, cmp.Or(p.status, statusOf[code]), code)
				}
				return nil
			})
			if err != nil {
				return "", err
			}
		}
		slices.Sort(statuses)
		return fmt.Sprintf("%d requests: error %s, status %v", len(ps), code, slices.Compact(statuses)), nil
	}
}

func (k *checker) send(ctx context.Context, p probe) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, k.o.Client.Silence)
	defer cancel()
	body := io.Reader(strings.NewReader(p.body))
	if p.size > int64(len(p.body)) {
		body = io.MultiReader(body, stalled{ctx})
	}
	resp, err := k.c.send(ctx, p.method, p.path, p.auth, body, max(p.size, int64(len(p.body))))
	if err != nil {
		return 0, "", err
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
	nc.SetDeadline(start.Add(limit + 5*time.Second))
	if _, err := io.WriteString(nc, "POST "+PathRun+" HTTP/1.1\r\nHost: agent\r\n"); err != nil {
		return "", err
	}
	if _, err := io.Copy(io.Discard, nc); errors.Is(err, os.ErrDeadlineExceeded) {
		return "", fmt.Errorf("the connection is still open %v after half a request (header timeout %v)", time.Since(start).Round(time.Millisecond), limit)
	}
	return fmt.Sprintf("closed after %v (header timeout %v)", time.Since(start).Round(time.Millisecond), limit), nil
}

// whenFree calls f until it is not refused as busy (a cancelled request
// may still be stopping), for at most the silence limit.
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

// needs skips a check whose capability the agent does not announce.
func (k *checker) needs(capability string) error {
	if !slices.Contains(k.info.Capabilities, capability) {
		return skipError(fmt.Sprintf("the agent does not announce %s (capabilities %v)", capability, k.info.Capabilities))
	}
	return nil
}

func (k *checker) loadModel(ctx context.Context) (string, error) {
	var info ModelInfo
	err := k.whenFree(func() (err error) { info, err = k.c.LoadModel(ctx, k.o.Model); return err })
	if err == nil && (info.Layers < 1 || info.Experts < 2 || info.TopK < 1 || info.TopK > info.Experts || info.TotalExpertBytes <= 0) {
		err = fmt.Errorf("implausible model info %+v", info)
	}
	return fmt.Sprintf("%s: %d MoE layers × %d experts, top-%d, %s of experts", info.Name, info.Layers, info.Experts, info.TopK, sim.FormatBytes(info.TotalExpertBytes)), err
}

// run checks a run's stream against its result (CheckRun), with every
// series field on every token when series.
func (k *checker) run(series bool) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		var samples []TokenSample
		var res *sim.Result
		start := time.Now()
		err := k.whenFree(func() (err error) {
			samples = samples[:0]
			res, err = k.c.run(ctx, Run{Spec: k.o.Spec, Series: series}, func(s TokenSample) error { samples = append(samples, s); return nil })
			return err
		})
		if err = cmp.Or(err, CheckRun(samples, res)); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d passes, %d tokens, %.2f tok/s, hit rate %.3f, %d samples valid (series %v), %v wall",
			res.Passes, res.Tokens, res.TokensPerSec, res.HitRate, len(samples), series, time.Since(start).Round(time.Millisecond)), nil
	}
}

// Faults the busy and cancel checks find (CheckResult.Err wraps them).
var (
	errNotBusy  = errors.New("a second run was accepted during a run: want busy")
	errNoCancel = errors.New("the engine does not stop when its run is closed")
	errStop     = errors.New("stop") // ends a probe's run at its first token
)

// busy: a run requested (on a new connection) while another streams is
// answered busy; one accepted is a fault if the first streams on (3 more
// passes), else the first ended first and the attempt is repeated (3 at most).
func (k *checker) busy(ctx context.Context) (string, error) {
	dial := func() (*Client, error) { return DialWith(ctx, k.c.target.String(), k.token, k.o.Client) }
	for range 3 {
		a, err := dial() // new connections each, for agents that serve connections apart
		if err != nil {
			return "", err
		}
		var passes atomic.Int64
		first, ended := make(chan struct{}), make(chan error, 1)
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
		b, err := dial()
		if err == nil {
			_, err = b.Run(ctx, k.o.Spec, func(TokenSample) error { at = passes.Load(); return errStop })
			b.Close()
		}
		errA := <-ended
		a.Close()
		var re *RemoteError
		switch {
		case errA != nil:
			return "", fmt.Errorf("the check's run: %v", errA)
		case errors.As(err, &re) && re.Code == CodeBusy:
			return "409 busy: " + re.Message, nil
		case at < 0:
			return "", fmt.Errorf("%w (it got %v)", errNotBusy, err)
		case passes.Load()-at >= 3:
			return "", fmt.Errorf("%w (the first streamed on for %d more passes)", errNotBusy, passes.Load()-at)
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
			return fmt.Sprintf("a new run was accepted %v after the first was closed", took.Round(time.Microsecond)), nil
		case errors.Is(err, errStop) || errors.Is(err, ErrBusy) && time.Since(closed) > k.o.CancelWithin:
			return "", fmt.Errorf("%w: still busy %v after, more than %v", errNoCancel, took.Round(time.Millisecond), k.o.CancelWithin)
		case !errors.Is(err, ErrBusy):
			return "", err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (k *checker) record(ctx context.Context) (string, error) {
	if err := k.needs(CapRecord); err != nil {
		return "", err
	}
	var t *RecordedTrace
	if err := k.whenFree(func() (err error) { t, err = k.c.Record(ctx, 4); return err }); err != nil {
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
	if err := k.needs(CapCalibrate); err != nil {
		return "", err
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

// CheckRun checks a run's samples against each other and its Result (and
// the Result's own invariants).
func CheckRun(samples []TokenSample, r *sim.Result) error {
	if r == nil {
		return errors.New("no result")
	}
	if len(samples) == 0 || int64(len(samples)) != r.Passes {
		return fmt.Errorf("%d samples for %d passes", len(samples), r.Passes)
	}
	var tokens, sumTime, sumStall, end int64
	for i, s := range samples {
		switch err := s.Validate(); {
		case err != nil:
			return err
		case s.Pass != int64(i):
			return fmt.Errorf("sample %d is pass %d", i, s.Pass)
		case s.StartNS < end:
			return fmt.Errorf("pass %d starts at %d ns, before pass %d ended (%d ns)", i, s.StartNS, i-1, end)
		}
		end = s.StartNS + s.TimeNS
		tokens, sumTime, sumStall = tokens+int64(s.Tokens), sumTime+s.TimeNS, sumStall+s.StallNS
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
	return r.Check()
}
