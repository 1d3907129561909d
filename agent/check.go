package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	Err     error // the check's error (nil when it passed)
}

// Unchecked reports whether r is a failed handshake that says nothing about
// conformance, so that nothing was checked: no connection, no answer to the
// hello, the token refused, no protocol version in common, or not a lessim
// agent at the target.
func (r CheckResult) Unchecked() bool {
	if r.Name != handshakeCheck || r.Outcome != CheckFail {
		return false
	}
	for _, e := range []error{ErrUnreachable, ErrSilent, ErrAuth, ErrVersion, ErrNotAgent} {
		if errors.Is(r.Err, e) {
			return true
		}
	}
	return false
}

// handshakeCheck is the first check's name: when it fails, no other runs.
const handshakeCheck = "handshake"

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
		r.Detail, r.Err = detail, err
		out = append(out, r)
		if report != nil {
			report(r)
		}
	}
	add(handshakeCheck, k.handshake)
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
