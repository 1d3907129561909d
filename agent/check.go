package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

// DefaultCheckSpec is the run `lessim agent check` asks for unless told
// otherwise: short, with the fields every engine's spec has.
const DefaultCheckSpec = `{"policy": {"name": "les"}, "cache": {"size": "25%"}, "trace": {"synthetic": {"tokens": 16}}}`

// CheckOptions configure a conformance check.
type CheckOptions struct {
	// Spec is a short run the agent's engine accepts (default
	// DefaultCheckSpec); it must last long enough (a few passes, a second or
	// more) for the busy and cancel probes.
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
	// CancelWithin is how soon the agent must confirm a cancel (default
	// DefaultCancelWithin).
	CancelWithin time.Duration
	// Client are the client options (timeouts, usbmuxd address).
	Client Options
}

// DefaultCancelWithin is how soon an agent must confirm a cancel: time to
// finish the decode pass in progress, and no more.
const DefaultCancelWithin = 2 * time.Second

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
}

// Check runs the conformance checks against the agent at target: every
// message type, the error paths (token, version, garbage, unknown type,
// oversize frame, invalid spec), the previous protocol version served,
// busy, cancel, disconnect mid-run, the units and sanity of the
// measurements, and a run's per-token series (or its refusal by an agent
// without CapSeries). report (if set) gets each result as
// it is known. A check that cannot decide says SKIP and why.
func Check(ctx context.Context, target, token string, o CheckOptions, report func(CheckResult)) []CheckResult {
	if len(o.Spec) == 0 {
		o.Spec = json.RawMessage(DefaultCheckSpec)
	}
	o.Client = o.Client.withDefaults()
	if o.CancelWithin <= 0 {
		o.CancelWithin = DefaultCancelWithin
	}
	k := &checker{target: target, token: token, o: o}
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
		r.Detail = detail
		out = append(out, r)
		if report != nil {
			report(r)
		}
	}
	add("handshake", k.handshake)
	if k.welcome == nil {
		return out // nothing else can work
	}
	add("device facts", k.facts)
	add("ping", k.ping)
	add("wrong token refused", k.wrongToken)
	add("version mismatch refused", k.versionMismatch)
	add("previous version served", k.previousVersion)
	add("garbage frame", k.fatalFrame(rawBody("this is not JSON"), CodeBadFrame))
	add("unknown message type", k.fatalFrame(rawBody(`{"type":"frobnicate","id":1}`), CodeUnknownType))
	add("oversize frame", k.oversize)
	add("silent client cut at handshake timeout", k.silentClient)
	if o.Model != "" {
		add("load_model", k.loadModel)
	}
	add("load_model of an unknown model refused", k.loadUnknown)
	add("invalid spec refused", k.invalidSpec)
	add("run: stream and result", k.run)
	add("run: per-token series", k.series)
	add("busy: second connection", k.busyOther)
	add("busy: same connection, then cancel", k.busySameAndCancel)
	add("cancel of no running request", k.cancelUnknown)
	add("disconnect mid-run frees the engine", k.disconnect)
	add("record: routing trace", k.record)
	add("record of 0 tokens refused", k.recordBad)
	if o.Calibrate {
		add("calibrate", k.calibrate)
	}
	return out
}

// skipError marks a check that could not decide.
type skipError string

func (s skipError) Error() string { return string(s) }

type checker struct {
	target, token string
	o             CheckOptions
	welcome       *Welcome
}

func (k *checker) dial(ctx context.Context) (*Client, error) {
	return DialWith(ctx, k.target, k.token, k.o.Client)
}

func (k *checker) handshake(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	w := c.Welcome()
	k.welcome = &w
	for _, want := range []string{CapRun, CapCancel} {
		if !slices.Contains(w.Capabilities, want) {
			return "", fmt.Errorf("capability %s missing from %v", want, w.Capabilities)
		}
	}
	return fmt.Sprintf("protocol %d, %s, capabilities %v", w.ProtocolVersion, w.Agent, w.Capabilities), nil
}

func (k *checker) facts(context.Context) (string, error) {
	d := k.welcome.Device
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

func (k *checker) ping(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	start := time.Now()
	if err := c.Ping(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("pong in %v", time.Since(start).Round(time.Microsecond)), nil
}

// wire is a raw connection for probes that break the rules.
type wire struct {
	nc    net.Conn
	limit int
	wait  time.Duration
}

// greeted is a raw connection that has said hello with the token (closed on
// error; the caller closes it otherwise).
func (k *checker) greeted(ctx context.Context) (*wire, error) {
	w, err := k.raw(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.hello(k.token); err != nil {
		w.nc.Close()
		return nil, err
	}
	return w, nil
}

// raw dials the target with the client's timeouts and limits, without a handshake.
func (k *checker) raw(ctx context.Context) (*wire, error) {
	t, err := ParseTarget(k.target)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, k.o.Client.DialTimeout)
	defer cancel()
	nc, err := t.dial(dctx, k.o.Client.Usbmux)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return &wire{nc: nc, limit: k.o.Client.MaxFrameBytes, wait: k.o.Client.Silence}, nil
}

func (w *wire) sendRaw(b []byte) error {
	w.nc.SetWriteDeadline(time.Now().Add(w.wait))
	_, err := w.nc.Write(b)
	return err
}

func (w *wire) send(typ string, id uint64, payload any) error {
	var raw json.RawMessage
	if payload != nil {
		b, _ := json.Marshal(payload)
		raw = b
	}
	w.nc.SetWriteDeadline(time.Now().Add(w.wait))
	return WriteFrame(w.nc, &Message{Type: typ, ID: id, Payload: raw}, w.limit)
}

// next reads the next frame that is not a heartbeat.
func (w *wire) next() (*Message, error) {
	for {
		w.nc.SetReadDeadline(time.Now().Add(w.wait))
		m, err := ReadFrame(w.nc, w.limit)
		if err != nil {
			return nil, readErr(err)
		}
		if m.Type != TypeHeartbeat {
			return m, nil
		}
	}
}

func (w *wire) hello(token string) error {
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: ProtocolVersion, Token: token, Client: "lessim agent check"}); err != nil {
		return err
	}
	m, err := w.next()
	if err != nil {
		return err
	}
	if m.Type != TypeWelcome {
		return fmt.Errorf("hello answered with %s", m.Type)
	}
	return nil
}

// expectError reads frames until the one for id: it must be an error with
// code. Token frames of a running request are skipped.
func (w *wire) expectError(id uint64, code string) error {
	for {
		m, err := w.next()
		if err != nil {
			return fmt.Errorf("waiting for error %s: %w", code, err)
		}
		if m.ID != id {
			continue
		}
		if m.Type == TypeToken {
			continue
		}
		if m.Type != TypeError {
			return fmt.Errorf("expected error %s, got %s", code, m.Type)
		}
		var p ErrorPayload
		if err := json.Unmarshal(m.Payload, &p); err != nil || p.Code != code {
			return fmt.Errorf("expected error %s, got %s", code, m.Payload)
		}
		return nil
	}
}

// expectClosed waits for the agent to close the connection.
func (w *wire) expectClosed() error {
	w.nc.SetReadDeadline(time.Now().Add(w.wait))
	_, err := io.Copy(io.Discard, w.nc)
	if isTimeout(err) {
		return fmt.Errorf("the agent kept the connection open after a fatal error")
	}
	return nil
}

// fatal expects an error frame with code for id, then the connection's end.
func (w *wire) fatal(id uint64, code string) (string, error) {
	if err := w.expectError(id, code); err != nil {
		return "", err
	}
	if err := w.expectClosed(); err != nil {
		return "", err
	}
	return "error " + code + ", connection closed", nil
}

func (k *checker) wrongToken(ctx context.Context) (string, error) {
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	other, err := NewToken()
	if err != nil {
		return "", err
	}
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: ProtocolVersion, Token: other, Client: "check"}); err != nil {
		return "", err
	}
	return w.fatal(0, CodeAuth)
}

func (k *checker) versionMismatch(ctx context.Context) (string, error) {
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: ProtocolVersion + 1000, Token: k.token, Client: "check"}); err != nil {
		return "", err
	}
	return w.fatal(0, CodeVersion)
}

// previousVersion: a hello in MinProtocolVersion is welcomed in that
// version, without the capabilities it does not have.
func (k *checker) previousVersion(ctx context.Context) (string, error) {
	if MinProtocolVersion == ProtocolVersion {
		return "", skipError("this client speaks one version")
	}
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: MinProtocolVersion, Token: k.token, Client: "check"}); err != nil {
		return "", err
	}
	m, err := w.next()
	if err != nil {
		return "", err
	}
	var wl Welcome
	if err := want(m, TypeWelcome, &wl); err != nil {
		return "", fmt.Errorf("a version-%d hello: %w", MinProtocolVersion, err)
	}
	if wl.ProtocolVersion != MinProtocolVersion || slices.Contains(wl.Capabilities, CapSeries) {
		return "", fmt.Errorf("a version-%d hello welcomed in version %d with capabilities %v (want version %d, no %s)",
			MinProtocolVersion, wl.ProtocolVersion, wl.Capabilities, MinProtocolVersion, CapSeries)
	}
	return fmt.Sprintf("welcome in version %d, capabilities %v", wl.ProtocolVersion, wl.Capabilities), nil
}

func rawBody(body string) []byte {
	b := make([]byte, headerBytes+len(body))
	b[0], b[1], b[2], b[3] = byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
	copy(b[headerBytes:], body)
	return b
}

// fatalFrame sends raw bytes after a valid hello and expects a fatal error.
func (k *checker) fatalFrame(b []byte, code string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		w, err := k.raw(ctx)
		if err != nil {
			return "", err
		}
		defer w.nc.Close()
		if err := w.hello(k.token); err != nil {
			return "", err
		}
		if err := w.sendRaw(b); err != nil {
			return "", err
		}
		return w.fatal(0, code)
	}
}

// oversize announces a frame one byte above the agent's limit and never
// sends the body: the agent must refuse on the header alone.
func (k *checker) oversize(ctx context.Context) (string, error) {
	n := uint32(k.welcome.Limits.MaxFrameBytes + 1)
	d, err := k.fatalFrame([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, CodeTooLarge)(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (announced %d bytes, sent none)", d, n), nil
}

func (k *checker) silentClient(ctx context.Context) (string, error) {
	hs := time.Duration(k.welcome.Limits.HandshakeTimeoutNS)
	if hs > 30*time.Second {
		return "", skipError(fmt.Sprintf("handshake timeout %v is too long to wait for", hs))
	}
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	w.wait = hs + 5*time.Second
	start := time.Now()
	if _, err := w.fatal(0, CodeTimeout); err != nil {
		return "", err
	}
	return fmt.Sprintf("error timeout after %v (limit %v), connection closed", time.Since(start).Round(time.Millisecond), hs), nil
}

func (k *checker) loadModel(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var info ModelInfo
	err = k.whenFree(func() error {
		var err error
		info, err = c.LoadModel(ctx, k.o.Model)
		return err
	})
	if err != nil {
		return "", err
	}
	if info.Layers < 1 || info.Experts < 2 || info.TopK < 1 || info.TopK > info.Experts || info.TotalExpertBytes <= 0 {
		return "", fmt.Errorf("implausible model info %+v", info)
	}
	return fmt.Sprintf("%s: %d MoE layers × %d experts, top-%d, %s of experts", info.Name, info.Layers, info.Experts, info.TopK, sim.FormatBytes(info.TotalExpertBytes)), nil
}

func (k *checker) loadUnknown(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := k.whenFree(func() error { _, err := c.LoadModel(ctx, "no-such-model-for-lessim-check"); return err }); !errors.Is(err, ErrRefused) {
		return "", fmt.Errorf("got %v, want error %s", err, CodeInvalidSpec)
	}
	if err := c.Ping(ctx); err != nil {
		return "", fmt.Errorf("connection unusable after the refusal: %w", err)
	}
	return "error invalid_spec, connection still usable", nil
}

// invalidSpec adds a field no spec has: engines refuse what they would ignore.
func (k *checker) invalidSpec(ctx context.Context) (string, error) {
	var m map[string]any
	if err := json.Unmarshal(k.o.Spec, &m); err != nil {
		return "", fmt.Errorf("the check's spec: %v", err)
	}
	m["no_such_field_lessim_check"] = true
	bad, _ := json.Marshal(m)
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := k.whenFree(func() error { _, err := c.Run(ctx, bad, nil); return err }); !errors.Is(err, ErrRefused) {
		return "", fmt.Errorf("a spec with an unknown field: got %v, want error %s", err, CodeInvalidSpec)
	}
	if err := c.Ping(ctx); err != nil {
		return "", fmt.Errorf("connection unusable after the refusal: %w", err)
	}
	return "error invalid_spec, connection still usable", nil
}

func (k *checker) run(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var samples []TokenSample
	start := time.Now()
	var res *sim.Result
	err = k.whenFree(func() error {
		samples = samples[:0]
		var err error
		res, err = c.Run(ctx, k.o.Spec, func(s TokenSample) error { samples = append(samples, s); return nil })
		return err
	})
	if err != nil {
		return "", err
	}
	if err := CheckRun(samples, res); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d passes, %d tokens, %.2f tok/s, hit rate %.3f, %d samples valid, %v wall", res.Passes, res.Tokens, res.TokensPerSec, res.HitRate, len(samples), time.Since(start).Round(time.Millisecond)), nil
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

// series: an agent announcing CapSeries sends every series field on every
// token of a run that asks, consistent with the result; one that does not
// refuses such a run with invalid_spec and stays usable.
func (k *checker) series(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if !slices.Contains(k.welcome.Capabilities, CapSeries) {
		err := k.whenFree(func() error { _, err := c.run(ctx, Run{Spec: k.o.Spec, Series: true}, nil); return err })
		if !errors.Is(err, ErrRefused) {
			return "", fmt.Errorf("a run asking for its series from an agent without %s: got %v, want error %s", CapSeries, err, CodeInvalidSpec)
		}
		if err := c.Ping(ctx); err != nil {
			return "", fmt.Errorf("connection unusable after the refusal: %w", err)
		}
		return fmt.Sprintf("not announced: error %s, connection still usable", CodeInvalidSpec), nil
	}
	var res *sim.Result
	var samples []TokenSample
	err = k.whenFree(func() error {
		var err error
		res, samples, err = c.RunSeries(ctx, k.o.Spec)
		return err
	})
	if err != nil {
		return "", err
	}
	if err := CheckRun(samples, res); err != nil {
		return "", err
	}
	var faults int64
	for _, s := range samples {
		faults += *s.MajorFaults
	}
	return fmt.Sprintf("%d passes, each with %s; %d major faults", len(samples), seriesNames, faults), nil
}

// seriesNames lists the series fields, for messages.
var seriesNames = func() string {
	var s TokenSample
	var n []string
	for _, f := range s.seriesFields() {
		n = append(n, f.n)
	}
	return strings.Join(n, ", ")
}()

// startRun starts the check's run on a raw connection and waits for its
// first token.
func (k *checker) startRun(ctx context.Context, id uint64) (*wire, error) {
	var w *wire
	err := k.whenFree(func() error {
		var err error
		w, err = k.tryRun(ctx, id)
		return err
	})
	return w, err
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

// tryRun starts the check's run on a new raw connection.
func (k *checker) tryRun(ctx context.Context, id uint64) (*wire, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.send(TypeRun, id, Run{Spec: k.o.Spec}); err != nil {
		w.nc.Close()
		return nil, err
	}
	m, err := w.next()
	if err != nil {
		w.nc.Close()
		return nil, err
	}
	if m.Type == TypeBusy && m.ID == id {
		w.nc.Close()
		return nil, &RemoteError{Code: CodeBusy, Message: string(m.Payload)}
	}
	if m.Type != TypeToken || m.ID != id {
		w.nc.Close()
		return nil, fmt.Errorf("expected the run's first token, got %s %s", m.Type, clip(string(m.Payload), 200))
	}
	return w, nil
}

// probeAttempts is how often the busy and cancel probes start a run before
// they give up on a run that ends before the probe: on a loaded host the
// probe may lose the race with a short run's end, and one more run decides.
const probeAttempts = 3

// errRaced marks a probe attempt that cannot decide: the run ended before
// the probe reached the agent.
var errRaced = errors.New("the run ended before the probe")

// busyOther: a second connection's run while a run holds the engine is
// answered busy. The probe connection says hello before the run starts, so
// only its run request races the run's end. A probe run accepted is a fault
// only if the first run provably went on after it was accepted (see
// overlapped); otherwise the attempt is repeated.
func (k *checker) busyOther(ctx context.Context) (string, error) {
	for range probeAttempts {
		d, err := k.busyOtherOnce(ctx)
		if !errors.Is(err, errRaced) {
			return d, err
		}
	}
	return "", skipError(fmt.Sprintf("the first run ended before the second connection's run reached the agent, %d times: give --spec a longer run", probeAttempts))
}

func (k *checker) busyOtherOnce(ctx context.Context) (string, error) {
	b, err := k.greeted(ctx)
	if err != nil {
		return "", err
	}
	defer b.nc.Close()
	var a *wire
	err = k.whenFree(func() error {
		var err error
		a, err = k.runPinged(ctx)
		return err
	})
	if err != nil {
		return "", err
	}
	defer a.nc.Close()
	if err := b.send(TypeRun, 1, Run{Spec: k.o.Spec}); err != nil {
		return "", err
	}
	m, err := b.next()
	if err != nil {
		return "", fmt.Errorf("a second connection's run during a run: %w", err)
	}
	switch {
	case m.ID == 1 && m.Type == TypeBusy:
		var p BusyPayload
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			return "", fmt.Errorf("busy payload %s: %v", clip(string(m.Payload), 200), err)
		}
		if err := b.send(TypePing, 2, nil); err != nil {
			return "", err
		}
		if m, err := b.next(); err != nil || m.Type != TypePong || m.ID != 2 {
			return "", fmt.Errorf("connection unusable after busy: %v", frameOrErr(m, err))
		}
		return "busy: " + p.Message, nil
	case m.ID == 1 && m.Type == TypeToken:
		n, err := a.overlapped(1)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", errRaced
		}
		return "", fmt.Errorf("a second connection's run was accepted and streamed while the first run went on (%d more passes of the first run after it): want busy", n)
	}
	return "", fmt.Errorf("a second connection's run during a run: got %s %s, want busy", m.Type, clip(string(m.Payload), 200))
}

// runPinged starts the check's run (id 1) on a new connection with a ping
// in the same write, and returns once the pong came: the agent has read the
// run (and holds the engine for it) but the run has not had time to end, as
// it would have by its first token (a simulation or a model's prefill
// first). A busy answer to the run is ErrBusy.
func (k *checker) runPinged(ctx context.Context) (*wire, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return nil, err
	}
	const pingID = 1 << 32
	b, err := frames(w.limit, k.runFrame(1), &Message{Type: TypePing, ID: pingID})
	if err == nil {
		err = w.sendRaw(b)
	}
	for err == nil {
		var m *Message
		if m, err = w.next(); err != nil {
			break
		}
		switch {
		case m.ID == pingID && m.Type == TypePong:
			return w, nil
		case m.ID == 1 && m.Type == TypeBusy:
			err = &RemoteError{Code: CodeBusy, Message: string(m.Payload)}
		case m.ID == 1 && m.Type != TypeToken:
			err = fmt.Errorf("the check's run: got %s %s", m.Type, clip(string(m.Payload), 200))
		}
	}
	w.nc.Close()
	return nil, err
}

// frames encodes ms as one buffer, to be sent in one write.
func frames(limit int, ms ...*Message) ([]byte, error) {
	var b bytes.Buffer
	for _, m := range ms {
		if err := WriteFrame(&b, m, limit); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// runFrame is the run request id of the check's run.
func (k *checker) runFrame(id uint64) *Message {
	b, err := json.Marshal(Run{Spec: k.o.Spec})
	if err != nil {
		b = nil // the agent refuses a run without payload: the failure shows
	}
	return &Message{Type: TypeRun, ID: id, Payload: b}
}

// overlapped tells whether the run id on w went on after a request of
// another connection was accepted (the caller saw that request's first
// frame before calling). It pings on w: the pong leaves the agent after the
// other request was accepted, and a token of id that follows the pong on
// this ordered stream was emitted after that too. An agent that answers
// busy ends a run's stream of tokens before it frees the engine. It returns
// how many tokens of id follow the pong (0: no evidence of overlap).
func (w *wire) overlapped(id uint64) (int, error) {
	const pingID = 1<<32 + 1
	if err := w.send(TypePing, pingID, nil); err != nil {
		return 0, err
	}
	ponged, after := false, 0
	for {
		m, err := w.next()
		if err != nil {
			return 0, fmt.Errorf("the first run's stream: %w", err)
		}
		switch {
		case m.ID == pingID && m.Type == TypePong:
			ponged = true
		case m.ID == id && m.Type == TypeToken:
			if ponged {
				after++
			}
		case m.ID == id:
			if ponged {
				return after, nil
			}
			// The run ended before the pong: wait for the pong, then
			// nothing of the run follows.
			for !ponged {
				m, err := w.next()
				if err != nil {
					return 0, fmt.Errorf("waiting for pong: %w", err)
				}
				ponged = m.ID == pingID && m.Type == TypePong
			}
			return 0, nil
		}
	}
}

// secondRunAnswer reads, from a connection that was sent run 1 and then
// run 2, the frames up to the answer to 2 (it must be busy) and run 1's
// first token or end. It tells whether 1 ended before. Run 1 answered busy
// (the engine held elsewhere) is ErrBusy. A run 2 accepted is a fault if 1
// streams on after 2's first frame (the stream is ordered: an agent that
// answers busy sends all of a run's tokens before it frees the connection);
// if 1 ends without streaming on, it ended before 2 reached the agent and
// the attempt cannot decide (errRaced).
func secondRunAnswer(next func() (*Message, error)) (ended bool, err error) {
	accepted, busy, started := false, false, false
	for !busy || !(started || ended) {
		m, err := next()
		if err != nil {
			return ended, err
		}
		switch {
		case m.ID == 1 && m.Type == TypeBusy && !started:
			return false, &RemoteError{Code: CodeBusy, Message: string(m.Payload)}
		case m.ID == 1 && m.Type == TypeToken:
			if accepted {
				return false, errors.New("a second run on the connection of a running run was accepted, and the first run went on streaming: want busy")
			}
			started = true
		case m.ID == 1:
			if accepted {
				return true, errRaced
			}
			if !started {
				return true, fmt.Errorf("the check's run: got %s %s before any token", m.Type, clip(string(m.Payload), 200))
			}
			ended = true
		case m.ID == 2 && m.Type == TypeBusy && !accepted:
			busy = true
		case m.ID == 2 && m.Type == TypeToken:
			if ended {
				return true, errRaced
			}
			accepted = true
		case m.ID == 2:
			return ended, fmt.Errorf("a second run on a busy connection: got %s %s, want busy", m.Type, clip(string(m.Payload), 200))
		}
	}
	return ended, nil
}

// frameOrErr describes what came instead of the frame wanted.
func frameOrErr(m *Message, err error) string {
	if err != nil {
		return err.Error()
	}
	return m.Type + " " + clip(string(m.Payload), 200)
}

// busySameAndCancel: a second run on the connection of a running run is
// answered busy; a cancel of the running run is confirmed with error
// cancelled within CancelWithin of sending it; the connection stays usable.
// An attempt whose run ends before busy or cancel could be probed is
// repeated.
func (k *checker) busySameAndCancel(ctx context.Context) (string, error) {
	var skip skipError
	for range probeAttempts {
		d, err := k.busySameAndCancelOnce(ctx)
		if !errors.As(err, &skip) {
			return d, err
		}
	}
	return "", skipError(fmt.Sprintf("%s (%d runs tried)", skip, probeAttempts))
}

func (k *checker) busySameAndCancelOnce(ctx context.Context) (string, error) {
	var w *wire
	var ended bool
	err := k.whenFree(func() error {
		var err error
		if w, err = k.greeted(ctx); err != nil {
			return err
		}
		// Both runs in one write: the agent reads run 2 right after run 1,
		// long before run 1 could end.
		b, err := frames(w.limit, k.runFrame(1), k.runFrame(2))
		if err == nil {
			err = w.sendRaw(b)
		}
		if err == nil {
			ended, err = secondRunAnswer(w.next)
		}
		if err != nil {
			w.nc.Close()
		}
		return err
	})
	if err == nil {
		defer w.nc.Close()
	}
	if errors.Is(err, errRaced) {
		return "", skipError("the run ended before the second run reached the agent (which then ran it): give --spec a longer run")
	}
	if err != nil {
		return "", err
	}
	if ended {
		return "", skipError("busy answered, but the run ended before cancel could be probed: give --spec a longer run")
	}
	start := time.Now()
	if err := w.send(TypeCancel, 1, nil); err != nil {
		return "", err
	}
	for {
		m, err := w.next()
		if err != nil {
			return "", err
		}
		if m.ID != 1 || m.Type == TypeToken {
			continue
		}
		if m.Type == TypeResult {
			return "", skipError("busy answered, but the run finished before the cancel arrived: give --spec a longer run")
		}
		var p ErrorPayload
		if m.Type != TypeError || json.Unmarshal(m.Payload, &p) != nil || p.Code != CodeCancelled {
			return "", fmt.Errorf("after cancel: got %s %s, want error cancelled", m.Type, clip(string(m.Payload), 200))
		}
		break
	}
	took := time.Since(start)
	if took > k.o.CancelWithin {
		return "", fmt.Errorf("cancel confirmed after %v, more than %v: the engine does not stop when cancelled", took.Round(time.Millisecond), k.o.CancelWithin)
	}
	if err := w.send(TypePing, 3, nil); err != nil {
		return "", err
	}
	if m, err := w.next(); err != nil || m.Type != TypePong || m.ID != 3 {
		return "", fmt.Errorf("connection unusable after cancel: %v", frameOrErr(m, err))
	}
	return fmt.Sprintf("busy for the second run; cancel confirmed in %v; connection still usable", took.Round(time.Microsecond)), nil
}

func (k *checker) cancelUnknown(ctx context.Context) (string, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeCancel, 99, nil); err != nil {
		return "", err
	}
	if err := w.expectError(99, CodeNoSuchRun); err != nil {
		return "", err
	}
	return "error no_such_run, connection still usable", nil
}

func (k *checker) disconnect(ctx context.Context) (string, error) {
	w, err := k.startRun(ctx, 1)
	if err != nil {
		return "", err
	}
	w.nc.Close()
	start := time.Now()
	deadline := start.Add(k.o.Client.Silence)
	for {
		w, err := k.tryRun(ctx, 1)
		if err == nil {
			w.nc.Close()
			return fmt.Sprintf("a new run streamed %v after the disconnect", time.Since(start).Round(time.Millisecond)), nil
		}
		if !errors.Is(err, ErrBusy) {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("still busy %v after the client disconnected", k.o.Client.Silence)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (k *checker) calibrate(ctx context.Context) (string, error) {
	if !slices.Contains(k.welcome.Capabilities, CapCalibrate) {
		return "", skipError(fmt.Sprintf("the agent does not announce %s (capabilities %v)", CapCalibrate, k.welcome.Capabilities))
	}
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var y []byte
	err = k.whenFree(func() error {
		var err error
		y, err = c.Calibrate(ctx, k.o.CalibrateOptions)
		return err
	})
	if err != nil {
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

// record asks for a short routing trace and checks it reads back, has the
// tokens asked for and describes a MoE model.
func (k *checker) record(ctx context.Context) (string, error) {
	if !slices.Contains(k.welcome.Capabilities, CapRecord) {
		return "", skipError(fmt.Sprintf("the agent does not announce %s (capabilities %v)", CapRecord, k.welcome.Capabilities))
	}
	n := k.o.RecordTokens
	if n <= 0 {
		n = 4
	}
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var t *RecordedTrace
	err = k.whenFree(func() error {
		var err error
		t, err = c.Record(ctx, n)
		return err
	})
	if err != nil {
		return "", err
	}
	m := t.Meta.Model
	if len(m.Layers) == 0 || m.TopK < 1 || m.Experts < m.TopK {
		return "", fmt.Errorf("the trace's model %q: %d MoE layers, top-%d of %d experts", m.Name, len(m.Layers), m.TopK, m.Experts)
	}
	return fmt.Sprintf("%d bytes: %d prefill + %d decode tokens of %s (%d MoE layers, top-%d of %d)",
		len(t.Parquet), t.PrefillTokens, t.DecodeTokens, m.Name, len(m.Layers), m.TopK, m.Experts), nil
}

// recordBad sends a record request of 0 tokens: a payload that does not
// validate, fatal bad_request whether or not the agent records.
func (k *checker) recordBad(ctx context.Context) (string, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeRecord, 1, Record{Tokens: 0}); err != nil {
		return "", err
	}
	return w.fatal(1, CodeBadRequest)
}
