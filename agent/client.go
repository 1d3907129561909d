package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/usbmux"
)

// Options tune a client; zero fields take the defaults.
type Options struct {
	// DialTimeout bounds connecting and the handshake (default 10 s).
	DialTimeout time.Duration
	// Silence is the longest the agent may send nothing while a request
	// runs (default 15 s; agents send a heartbeat every few seconds).
	Silence time.Duration
	// MaxFrameBytes bounds frames read from the agent (default MaxFrameBytes).
	MaxFrameBytes int
	// Usbmux is where usbmuxd listens, for usb:// targets (default
	// usbmux.DefaultAddress()).
	Usbmux usbmux.Address
	// Client names this client in its hello (default "lessim").
	Client string
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.Silence <= 0 {
		o.Silence = 15 * time.Second
	}
	if o.MaxFrameBytes <= 0 || o.MaxFrameBytes > MaxFrameBytes {
		o.MaxFrameBytes = MaxFrameBytes
	}
	if o.Usbmux == (usbmux.Address{}) {
		o.Usbmux = usbmux.DefaultAddress()
	}
	if o.Client == "" {
		o.Client = "lessim"
	}
	return o
}

// Client is a connection to an agent, after a successful handshake. It runs
// one request at a time; its methods may be called from several goroutines.
type Client struct {
	nc      net.Conn
	o       Options
	target  Target
	welcome Welcome

	mu  sync.Mutex // one request at a time
	id  uint64
	wmu sync.Mutex // one frame at a time
	err error      // set once the connection is unusable
}

// Dial connects to an agent at target (tcp://HOST:PORT or usb://UDID:PORT)
// and performs the handshake with token, with the default Options.
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
	ctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	for v := ProtocolVersion; ; v-- {
		c, err := dialVersion(ctx, t, token, o, v)
		var vr *versionRefused
		if errors.As(err, &vr) {
			if v > MinProtocolVersion {
				continue // an older agent: ask again in the previous version
			}
			err = vr.err
		}
		return c, err
	}
}

// versionRefused is an agent's error version answer to a hello (an agent
// that speaks only older versions, to which the client may fall back).
type versionRefused struct{ err error }

func (v *versionRefused) Error() string { return v.err.Error() }

// dialVersion connects to t and performs the handshake in protocol version v.
func dialVersion(ctx context.Context, t Target, token string, o Options, v int) (*Client, error) {
	nc, err := t.dial(ctx, o.Usbmux)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, t, err)
	}
	c := &Client{nc: nc, o: o, target: t}
	if err := c.handshake(ctx, token, v); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// handshake sends hello in protocol version v and reads the welcome, which
// must be in v too.
func (c *Client) handshake(ctx context.Context, token string, v int) error {
	dl, _ := ctx.Deadline()
	c.nc.SetDeadline(dl)
	defer c.nc.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	defer stop()
	if err := c.write(TypeHello, 0, Hello{ProtocolVersion: v, Token: token, Client: c.o.Client}); err != nil {
		return fmt.Errorf("%w: %s: hello: %v", ErrUnreachable, c.target, err)
	}
	m, err := ReadFrame(c.nc, c.o.MaxFrameBytes)
	if err != nil {
		if isTimeout(err) {
			return fmt.Errorf("%w: %s did not answer the hello within %v", ErrSilent, c.target, c.o.DialTimeout)
		}
		if pe := (*ProtocolError)(nil); errors.As(err, &pe) && pe.text {
			return fmt.Errorf("%w: %s answered the hello: %s", ErrNotAgent, c.target, pe.Message)
		}
		return fmt.Errorf("%s: handshake: %w", c.target, readErr(err))
	}
	switch m.Type {
	case TypeError:
		err := remoteError(m)
		if re := (*RemoteError)(nil); errors.As(err, &re) && re.Code == CodeVersion {
			return &versionRefused{err}
		}
		return err
	case TypeWelcome:
	default:
		return fmt.Errorf("%w: %s answered the hello with %s", ErrBadAgent, c.target, m.Type)
	}
	if err := decodeStrict(m.Payload, &c.welcome); err != nil {
		return fmt.Errorf("%w: welcome: %v", ErrBadAgent, err)
	}
	if c.welcome.ProtocolVersion != v {
		return &RemoteError{Code: CodeVersion, Message: fmt.Sprintf("the agent answered in protocol version %d, this client asked for %d", c.welcome.ProtocolVersion, v)}
	}
	if err := c.welcome.Validate(); err != nil {
		return fmt.Errorf("%w: welcome: %v", ErrBadAgent, err)
	}
	return nil
}

// Version is the protocol version of the connection: ProtocolVersion, or
// an older one an older agent speaks.
func (c *Client) Version() int { return c.welcome.ProtocolVersion }

// Welcome is the agent's handshake answer.
func (c *Client) Welcome() Welcome { return c.welcome }

// Facts are the device facts the agent reported.
func (c *Client) Facts() DeviceFacts { return c.welcome.Device }

// Target is where the client is connected.
func (c *Client) Target() Target { return c.target }

// Close closes the connection (a running request is cancelled by the agent).
func (c *Client) Close() error { return c.nc.Close() }

func (c *Client) write(typ string, id uint64, payload any) error {
	var raw json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		raw = b
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(c.o.Silence))
	return WriteFrame(c.nc, &Message{Type: typ, ID: id, Payload: raw}, c.o.MaxFrameBytes)
}

// readErr turns a frame-reading error into a client error.
func readErr(err error) error {
	var pe *ProtocolError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("%w: %v", ErrBadAgent, pe)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the agent closed the connection")
	}
	return err
}

func remoteError(m *Message) error {
	var p ErrorPayload
	if err := decodeStrict(m.Payload, &p); err != nil || p.Code == "" {
		return fmt.Errorf("%w: malformed error frame", ErrBadAgent)
	}
	return &RemoteError{Code: p.Code, Message: p.Message}
}

// do sends one request and reads until its final reply, passing stream items
// (token frames) to onItem. Cancelling ctx sends cancel and waits for the
// agent to confirm (at most the silence limit).
func (c *Client) do(ctx context.Context, typ string, payload any, onItem func(*Message) error) (*Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	c.id++
	id := c.id
	if err := c.write(typ, id, payload); err != nil {
		return nil, c.broken(fmt.Errorf("send %s to %s: %w", typ, c.target, err))
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(rctx, func() { c.write(TypeCancel, id, nil) })
	defer stop()
	var itemErr error
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.o.Silence))
		m, err := ReadFrame(c.nc, c.o.MaxFrameBytes)
		if err != nil {
			if itemErr != nil {
				return nil, c.broken(itemErr)
			}
			if isTimeout(err) {
				return nil, c.broken(fmt.Errorf("%w: %s sent nothing for %v during %s %d", ErrSilent, c.target, c.o.Silence, typ, id))
			}
			return nil, c.broken(fmt.Errorf("%s %d on %s: %w", typ, id, c.target, readErr(err)))
		}
		if m.ID != id {
			if m.Type == TypeError && m.ID == 0 { // connection-level: idle, shutdown
				return nil, c.broken(remoteError(m))
			}
			continue // a late reply to an earlier request (e.g. to a cancel)
		}
		switch m.Type {
		case TypeHeartbeat:
			continue
		case TypeError:
			err := remoteError(m)
			switch {
			case itemErr != nil:
				return nil, itemErr
			case errors.Is(err, ErrCancelled) && ctx.Err() != nil:
				return nil, fmt.Errorf("%s %d cancelled: %w", typ, id, ctx.Err())
			}
			return nil, err
		case TypeBusy:
			var p BusyPayload
			if err := decodeStrict(m.Payload, &p); err != nil {
				return nil, c.broken(fmt.Errorf("%w: malformed busy frame", ErrBadAgent))
			}
			return nil, &RemoteError{Code: CodeBusy, Message: p.Message}
		case TypeToken:
			if onItem == nil {
				return nil, c.broken(fmt.Errorf("%w: token frame in reply to %s", ErrBadAgent, typ))
			}
			if itemErr == nil {
				if err := onItem(m); err != nil {
					if errors.Is(err, ErrBadAgent) {
						return nil, c.broken(err) // do not wait on an agent that broke the protocol
					}
					itemErr = err // the caller's emit failed: cancel, then drain to the end
					cancel()
				}
			}
			continue
		}
		if itemErr != nil {
			return nil, itemErr
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return m, nil
	}
}

// broken marks the connection unusable and closes it.
func (c *Client) broken(err error) error {
	c.err = fmt.Errorf("connection to %s unusable after: %w", c.target, err)
	c.nc.Close()
	return err
}

// want checks a final reply's type and decodes its payload strictly.
func want(m *Message, typ string, v any) error {
	if m.Type != typ {
		return fmt.Errorf("%w: expected %s, got %s", ErrBadAgent, typ, m.Type)
	}
	if err := decodeStrict(m.Payload, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadAgent, typ, err)
	}
	return nil
}

// Ping checks the agent answers.
func (c *Client) Ping(ctx context.Context) error {
	m, err := c.do(ctx, TypePing, nil, nil)
	if err != nil {
		return err
	}
	return want(m, TypePong, &struct{}{})
}

// LoadModel asks the agent's engine to load a model.
func (c *Client) LoadModel(ctx context.Context, model string) (ModelInfo, error) {
	var info ModelInfo
	m, err := c.do(ctx, TypeLoadModel, LoadModel{Model: model}, nil)
	if err != nil {
		return info, err
	}
	return info, want(m, TypeModelLoaded, &info)
}

// Calibrate asks the agent to measure its device and returns the profile
// YAML. options is engine-defined JSON (nil for the defaults).
func (c *Client) Calibrate(ctx context.Context, options json.RawMessage) ([]byte, error) {
	var cal Calibration
	m, err := c.do(ctx, TypeCalibrate, Calibrate{Options: options}, nil)
	if err != nil {
		return nil, err
	}
	if err := want(m, TypeCalibration, &cal); err != nil {
		return nil, err
	}
	return []byte(cal.ProfileYAML), nil
}

// Run runs an experiment spec on the agent, passing each validated token
// sample to emit (which may be nil) and returning the agent's Result. An
// error from emit cancels the run and is returned.
func (c *Client) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	return c.run(ctx, Run{Spec: spec}, emit)
}

// RunSeries is Run asking for the run's per-token series (Run.Series): it
// returns the samples too, each with every series field (a row of the
// engine's per-token series, see runtime/live's TokenSample). It needs
// protocol version 4 and an agent that announces CapSeries.
func (c *Client) RunSeries(ctx context.Context, spec json.RawMessage) (*sim.Result, []TokenSample, error) {
	if err := c.SeriesSupported(); err != nil {
		return nil, nil, err
	}
	var samples []TokenSample
	res, err := c.run(ctx, Run{Spec: spec, Series: true}, func(s TokenSample) error {
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return res, samples, nil
}

// SeriesSupported says why RunSeries cannot work on this connection (nil
// when it can): the agent speaks an older protocol or does not announce
// CapSeries.
func (c *Client) SeriesSupported() error {
	switch {
	case c.Version() < 4:
		return fmt.Errorf("%s speaks protocol version %d, which carries no per-token series (version 4 does): update the agent", c.target, c.Version())
	case !slices.Contains(c.welcome.Capabilities, CapSeries):
		return fmt.Errorf("%s measures no per-token series (capabilities %v, no %s; a live engine agent has it)", c.target, c.welcome.Capabilities, CapSeries)
	}
	return nil
}

// run sends req and checks the stream: samples valid, in pass order, with
// the series fields exactly when req asked for them.
func (c *Client) run(ctx context.Context, req Run, emit func(TokenSample) error) (*sim.Result, error) {
	var next int64
	onItem := func(m *Message) error {
		var s TokenSample
		if err := decodeStrict(m.Payload, &s); err != nil {
			return fmt.Errorf("%w: token: %v", ErrBadAgent, err)
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%w: token: %v", ErrBadAgent, err)
		}
		if s.Pass != next {
			return fmt.Errorf("%w: token for pass %d, expected %d", ErrBadAgent, s.Pass, next)
		}
		switch missing := s.MissingSeries(); {
		case req.Series && missing != "":
			return fmt.Errorf("%w: token for pass %d: no %s in a run that asked for its series", ErrBadAgent, s.Pass, missing)
		case !req.Series && s.HasSeries():
			return fmt.Errorf("%w: token for pass %d: series fields in a run that did not ask for them", ErrBadAgent, s.Pass)
		}
		next++
		if emit == nil {
			return nil
		}
		return emit(s)
	}
	m, err := c.do(ctx, TypeRun, req, onItem)
	if err != nil {
		return nil, err
	}
	var p struct {
		Result json.RawMessage `json:"result"`
	}
	if err := want(m, TypeResult, &p); err != nil {
		return nil, err
	}
	var res sim.Result
	if err := json.Unmarshal(p.Result, &res); err != nil || len(p.Result) == 0 || string(p.Result) == "null" {
		return nil, fmt.Errorf("%w: result payload is not a result", ErrBadAgent)
	}
	if res.Passes != next {
		return nil, fmt.Errorf("%w: result has %d passes, the agent streamed %d", ErrBadAgent, res.Passes, next)
	}
	return &res, nil
}

// RunRemote dials target, runs spec there (see Client.Run) and hangs up. It
// returns the result and the device facts the agent reported.
func RunRemote(ctx context.Context, target, token string, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, DeviceFacts, error) {
	c, err := Dial(ctx, target, token)
	if err != nil {
		return nil, DeviceFacts{}, err
	}
	defer c.Close()
	res, err := c.Run(ctx, spec, emit)
	return res, c.Facts(), err
}

// CalibrateRemote dials target, calibrates its device (see
// Client.Calibrate) and hangs up. It returns the profile YAML and the device
// facts the agent reported.
func CalibrateRemote(ctx context.Context, target, token string, options json.RawMessage) ([]byte, DeviceFacts, error) {
	c, err := Dial(ctx, target, token)
	if err != nil {
		return nil, DeviceFacts{}, err
	}
	defer c.Close()
	y, err := c.Calibrate(ctx, options)
	return y, c.Facts(), err
}
