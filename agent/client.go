package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
	"github.com/lessim/lessim/usbmux"
)

// Options tune a client; zero fields take the defaults.
type Options struct {
	DialTimeout time.Duration  // connecting, and the Info request of Dial (10 s)
	Silence     time.Duration  // the longest the agent may send nothing while a request runs (15 s; heartbeats come every few)
	Usbmux      usbmux.Address // where usbmuxd listens, for usb:// targets (usbmux.DefaultAddress())
}

func (o Options) withDefaults() Options {
	o.DialTimeout, o.Silence = cmp.Or(max(o.DialTimeout, 0), 10*time.Second), cmp.Or(max(o.Silence, 0), 15*time.Second)
	if o.Usbmux == (usbmux.Address{}) {
		o.Usbmux = usbmux.DefaultAddress()
	}
	return o
}

// maxLineBytes bounds one line of an answer (a record's trace is one line).
const maxLineBytes = 256 << 20

// Client is an HTTP client of one agent; its methods may be called from
// several goroutines (the agent answers busy to all but one engine request).
type Client struct {
	hc     *http.Client
	base   string // http://HOST:PORT
	token  string
	o      Options
	target Target
	info   Info
}

// Dial connects to the agent at target and asks for its Info with token.
func Dial(ctx context.Context, target, token string) (*Client, error) {
	return DialWith(ctx, target, token, Options{})
}

// DialWith is Dial with options.
func DialWith(ctx context.Context, target, token string, o Options) (*Client, error) {
	o = o.withDefaults()
	t, err := ParseTarget(target)
	if err != nil {
		return nil, err
	}
	host := net.JoinHostPort(t.Host+t.UDID, strconv.Itoa(int(t.Port)))
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
			defer cancel()
			nc, err := t.dial(ctx, o.Usbmux)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, t, err)
			}
			return nc, nil
		},
		MaxResponseHeaderBytes: 64 << 10, DisableCompression: true, IdleConnTimeout: time.Minute,
	}
	c := &Client{hc: &http.Client{Transport: tr}, base: "http://" + host, token: token, o: o, target: t}
	if err := c.Ping(ctx); err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	return c, nil
}

// Ping asks for the agent's Info again, within the dial timeout.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, c.o.DialTimeout, fmt.Errorf("%w: %s did not answer within %v", ErrSilent, c.target, c.o.DialTimeout))
	defer cancel()
	resp, err := c.send(ctx, http.MethodGet, PathAgent, "Bearer "+c.token, nil, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var l Line
	var in Info
	switch {
	case err != nil:
		return c.transportErr(ctx, err)
	case resp.StatusCode != http.StatusOK && decodeStrict(b, &l) == nil && l.Error != nil:
		return &RemoteError{Code: l.Error.Code, Message: l.Error.Message}
	case resp.StatusCode != http.StatusOK || decodeStrict(b, &in) != nil:
		return fmt.Errorf("%w: %s answered %s %s", ErrNotAgent, c.target, resp.Status, strconv.Quote(clip(string(b), 80)))
	case in.Validate() != nil:
		return fmt.Errorf("%w: info: %v", ErrBadAgent, in.Validate())
	}
	c.info = in
	return nil
}

// Info is the agent's Info as Dial (or the last Ping) got it.
func (c *Client) Info() Info { return c.info }

// Capabilities are the capabilities the agent announced (Capable).
func (c *Client) Capabilities() []string { return c.info.Capabilities }

// Facts are the device facts the agent reported.
func (c *Client) Facts() DeviceFacts { return c.info.Device }

// Close closes the client's idle connections (not a running request).
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// send sends one request with auth as its Authorization header, announcing
// size bytes of body (more than it has, for a probe of the agent's limit).
func (c *Client) send(ctx context.Context, method, path, auth string, body io.Reader, size int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if req.ContentLength = size; auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportErr(ctx, err)
	}
	return resp, nil
}

// transportErr names what failed: no connection, silence, or not HTTP.
func (c *Client) transportErr(ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, ErrUnreachable):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx) // the caller's, or the silence or dial limit
	case strings.Contains(err.Error(), "malformed HTTP"):
		return fmt.Errorf("%w: %s: %v", ErrNotAgent, c.target, err)
	}
	return fmt.Errorf("%s: %w", c.target, err)
}

// do sends one engine request and returns its final line, passing token
// lines to onToken. Cancelling ctx, an error from onToken or silence
// closes the request, which cancels it on the agent.
func (c *Client) do(ctx context.Context, path string, req any, onToken func(TokenSample) error) (*Line, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(c.o.Silence, func() { cancel(fmt.Errorf("%w: %s sent nothing for %v", ErrSilent, c.target, c.o.Silence)) })
	defer watchdog.Stop()
	resp, err := c.send(ctx, http.MethodPost, path, "Bearer "+c.token, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	for sc.Scan() {
		watchdog.Reset(c.o.Silence)
		var l Line
		if err := decodeStrict(sc.Bytes(), &l); err != nil || l.fields() != 1 {
			return nil, fmt.Errorf("%w: %s answered %s with %s (%v)", ErrBadAgent, c.target, path, strconv.Quote(clip(sc.Text(), 80)), err)
		}
		switch {
		case l.Error != nil:
			return nil, &RemoteError{Code: l.Error.Code, Message: l.Error.Message}
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("%w: status %s without an error", ErrBadAgent, resp.Status)
		case l.Token != nil && onToken == nil:
			return nil, fmt.Errorf("%w: a token line in the answer to %s", ErrBadAgent, path)
		case l.Token != nil:
			err = onToken(*l.Token)
		case l.Heartbeat == nil:
			return &l, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, c.transportErr(ctx, ctx.Err())
	}
	return nil, fmt.Errorf("%w: the answer to %s ended without its final line (%v)", ErrBadAgent, path, cmp.Or(sc.Err(), io.ErrUnexpectedEOF))
}

// LoadModel asks the agent's engine to load a model.
func (c *Client) LoadModel(ctx context.Context, model string) (ModelInfo, error) {
	l, err := c.do(ctx, PathLoadModel, LoadModel{Model: model}, nil)
	if err != nil || l.Model == nil {
		return ModelInfo{}, cmp.Or(err, c.missing("model"))
	}
	return *l.Model, nil
}

// Calibrate asks the agent to measure its device and returns the profile YAML.
func (c *Client) Calibrate(ctx context.Context, options json.RawMessage) ([]byte, error) {
	l, err := c.do(ctx, PathCalibrate, Calibrate{Options: options}, nil)
	if err != nil || l.Calibration == nil {
		return nil, cmp.Or(err, c.missing("calibration"))
	}
	return []byte(l.Calibration.ProfileYAML), nil
}

// missing is a final line of the wrong kind.
func (c *Client) missing(kind string) error {
	return fmt.Errorf("%w: %s answered without a %s line", ErrBadAgent, c.target, kind)
}

// Run runs an experiment spec on the agent, passing each validated sample
// to emit (nil: none); an error from emit cancels the run.
func (c *Client) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	return c.run(ctx, Run{Spec: spec}, emit)
}

// run sends req and checks the stream: samples valid, in pass order, with
// the series fields exactly when req asked for them.
func (c *Client) run(ctx context.Context, req Run, emit func(TokenSample) error) (*sim.Result, error) {
	var next int64
	l, err := c.do(ctx, PathRun, req, func(s TokenSample) error {
		err := s.Validate()
		switch missing := s.MissingSeries(); {
		case err != nil:
		case s.Pass != next:
			err = fmt.Errorf("token for pass %d, expected %d", s.Pass, next)
		case req.Series && missing != "":
			err = fmt.Errorf("token for pass %d: no %s in a run that asked for its series", s.Pass, missing)
		case !req.Series && s.HasSeries():
			err = fmt.Errorf("token for pass %d: series fields in a run that did not ask for them", s.Pass)
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadAgent, err)
		}
		if next++; emit == nil {
			return nil
		}
		return emit(s)
	})
	if err != nil {
		return nil, err
	}
	var res sim.Result
	if l.Result == nil || string(l.Result) == "null" || json.Unmarshal(l.Result, &res) != nil {
		return nil, c.missing("result")
	}
	if res.Passes != next {
		return nil, fmt.Errorf("%w: result has %d passes, the agent streamed %d", ErrBadAgent, res.Passes, next)
	}
	return &res, nil
}

// RecordedTrace is a recorded trace file, checked row by row, with its
// metadata (the agent's model spec and provenance) and steps by phase.
type RecordedTrace struct {
	Parquet                     []byte
	Meta                        traces.Meta
	DecodeTokens, PrefillTokens int
}

// CheckTrace reads a trace file held in memory completely (every step is
// validated by the trace reader) and checks it has tokens decode steps.
func CheckTrace(b []byte, tokens int) (*RecordedTrace, error) {
	r, err := traces.NewReader(bytes.NewReader(b), "recorded trace")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	t := &RecordedTrace{Parquet: b, Meta: r.Meta()}
	for r.Next() {
		if r.Step().Phase == traces.Decode {
			t.DecodeTokens++
		} else {
			t.PrefillTokens++
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if t.DecodeTokens != tokens {
		return nil, fmt.Errorf("recorded trace: %d decode tokens, %d asked for", t.DecodeTokens, tokens)
	}
	return t, nil
}

// Record asks the agent to record the routing of tokens greedy decode
// tokens and returns the trace, checked (CheckTrace: a failure is
// ErrBadAgent).
func (c *Client) Record(ctx context.Context, tokens int) (*RecordedTrace, error) {
	req := Record{Tokens: tokens}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	l, err := c.do(ctx, PathRecord, req, nil)
	if err != nil || l.Trace == nil {
		return nil, cmp.Or(err, c.missing("trace"))
	}
	t, err := CheckTrace(l.Trace.Parquet, tokens)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAgent, err)
	}
	return t, nil
}
