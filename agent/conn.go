package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// conn is one client connection on the agent side. The reading goroutine
// (serveConn) owns the protocol state; a request runs in its own goroutine
// and writes through send, which serialises frames.
type conn struct {
	s   *Server
	nc  net.Conn
	ctx context.Context // cancelled when the connection ends or the agent stops
	lim Limits
	who string
	ver int // the protocol version the handshake agreed

	wmu   sync.Mutex
	wdead bool // a write failed: the connection is closed

	mu  sync.Mutex
	op  *request // this connection's running request
	ops sync.WaitGroup
}

// request is a running load_model, calibrate or run.
type request struct {
	id     uint64
	cancel context.CancelFunc
}

// serveConn runs one connection to its end; when it returns, the connection
// is closed and its request (if any) has been cancelled and has returned.
func (s *Server) serveConn(parent context.Context, nc net.Conn) {
	ctx, cancel := context.WithCancel(parent)
	cc := &conn{s: s, nc: nc, ctx: ctx, lim: s.limits(), who: nc.RemoteAddr().String()}
	defer func() {
		cancel()
		nc.Close()
		cc.ops.Wait()
	}()
	// Wake the reader when the agent stops.
	stop := context.AfterFunc(ctx, func() {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		nc.SetReadDeadline(time.Now())
	})
	defer stop()
	if err := cc.handshake(); err != nil {
		s.logf("%s: refused: %v", cc.who, err)
		return
	}
	s.logf("%s: connected", cc.who)
	err := cc.loop()
	s.logf("%s: closed: %v", cc.who, err)
}

// setReadDeadline arms the reader's deadline unless the agent is stopping.
func (cc *conn) setReadDeadline(t time.Time) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.ctx.Err() == nil {
		cc.nc.SetReadDeadline(t)
	}
}

// send writes one frame; a failed write closes the connection (which ends
// the reader and so cancels any request).
func (cc *conn) send(typ string, id uint64, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s: %w", typ, err)
	}
	return cc.sendMessage(&Message{Type: typ, ID: id, Payload: b})
}

func (cc *conn) sendMessage(m *Message) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	if cc.wdead {
		return net.ErrClosed
	}
	cc.nc.SetWriteDeadline(time.Now().Add(cc.lim.FrameTimeout))
	err := WriteFrame(cc.nc, m, cc.lim.MaxFrameBytes)
	var pe *ProtocolError
	if err != nil && !errors.As(err, &pe) {
		cc.wdead = true
		cc.nc.Close()
	}
	return err
}

// fail sends a fatal error frame; the caller then ends the connection.
func (cc *conn) fail(id uint64, err error) error {
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		pe = &ProtocolError{Code: CodeBadFrame, Message: err.Error()}
	}
	cc.sendMessage(errorMessage(id, pe.Code, pe.Message))
	return err
}

func (cc *conn) handshake() error {
	cc.setReadDeadline(time.Now().Add(cc.lim.HandshakeTimeout))
	m, err := ReadFrame(cc.nc, cc.lim.MaxFrameBytes)
	if err != nil {
		if isTimeout(err) && cc.ctx.Err() == nil {
			return cc.fail(0, protoErr(CodeTimeout, "no hello within %v", cc.lim.HandshakeTimeout))
		}
		return cc.fail(0, err)
	}
	if m.Type != TypeHello {
		return cc.fail(m.ID, protoErr(CodeUnexpected, "the first frame must be hello, not %s", m.Type))
	}
	var h Hello
	if err := decodeStrict(m.Payload, &h); err != nil {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "hello: %v", err))
	}
	newest := ProtocolVersion
	if cc.s.maxVersion > 0 {
		newest = cc.s.maxVersion
	}
	if h.ProtocolVersion < MinProtocolVersion || h.ProtocolVersion > newest {
		return cc.fail(m.ID, protoErr(CodeVersion, "this agent speaks protocol versions %d to %d, the client %d", MinProtocolVersion, newest, h.ProtocolVersion))
	}
	if !tokenEqual(h.Token, cc.s.Token) {
		return cc.fail(m.ID, protoErr(CodeAuth, "wrong token (the agent prints its token when it starts)"))
	}
	if err := validText("client", h.Client); err != nil {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "hello: %v", err))
	}
	cc.ver = h.ProtocolVersion
	w := Welcome{
		ProtocolVersion: cc.ver, Agent: cc.s.Agent, Device: cc.s.Engine.Facts(), Limits: cc.lim.wire(),
		Capabilities: capabilitiesAt(cc.s.Engine, cc.ver),
	}
	if err := cc.send(TypeWelcome, m.ID, w); err != nil {
		return err
	}
	cc.setReadDeadline(time.Now().Add(cc.lim.IdleTimeout))
	return nil
}

// loop reads requests until the client leaves, breaks the protocol or
// idles out, or the agent stops.
func (cc *conn) loop() error {
	for {
		cc.mu.Lock()
		if cc.ctx.Err() == nil {
			if cc.op != nil {
				cc.nc.SetReadDeadline(time.Time{}) // waiting for our own request is not idling
			} else {
				cc.nc.SetReadDeadline(time.Now().Add(cc.lim.IdleTimeout))
			}
		}
		cc.mu.Unlock()
		m, err := readFrame(cc.nc, cc.lim.MaxFrameBytes, func() { cc.setReadDeadline(time.Now().Add(cc.lim.FrameTimeout)) })
		if err != nil {
			switch {
			case cc.ctx.Err() != nil:
				cc.sendMessage(errorMessage(0, CodeShuttingDown, "the agent is stopping"))
				return errors.New("agent stopping")
			case errors.Is(err, io.EOF):
				return errors.New("client left")
			case isTimeout(err):
				return cc.fail(0, protoErr(CodeTimeout, "no complete frame in time (idle limit %v, frame limit %v)", cc.lim.IdleTimeout, cc.lim.FrameTimeout))
			}
			return cc.fail(0, err)
		}
		if err := cc.dispatch(m); err != nil {
			return err
		}
	}
}

// dispatch handles one request frame; an error ends the connection.
func (cc *conn) dispatch(m *Message) error {
	switch m.Type {
	case TypePing:
		if err := emptyPayload(m); err != nil {
			return cc.fail(m.ID, err)
		}
		return cc.send(TypePong, m.ID, struct{}{})
	case TypeCancel:
		if err := emptyPayload(m); err != nil {
			return cc.fail(m.ID, err)
		}
		return cc.cancelOp(m.ID)
	case TypeLoadModel:
		var p LoadModel
		if err := decodeStrict(m.Payload, &p); err != nil {
			return cc.fail(m.ID, protoErr(CodeBadRequest, "load_model: %v", err))
		}
		if p.Model == "" || validText("model", p.Model) != nil {
			return cc.fail(m.ID, protoErr(CodeBadRequest, "load_model: model must be non-empty UTF-8 of at most %d bytes", maxTextBytes))
		}
		return cc.start(m, "load_model", func(ctx context.Context) (string, any, error) {
			info, err := cc.s.Engine.LoadModel(ctx, p.Model)
			return TypeModelLoaded, info, err
		})
	case TypeCalibrate:
		var p Calibrate
		if err := decodeStrict(m.Payload, &p); err != nil {
			return cc.fail(m.ID, protoErr(CodeBadRequest, "calibrate: %v", err))
		}
		return cc.start(m, "calibrate", func(ctx context.Context) (string, any, error) {
			y, err := cc.s.Engine.Calibrate(ctx, p.Options)
			return TypeCalibration, Calibration{ProfileYAML: string(y)}, err
		})
	case TypeRecord:
		return cc.record(m)
	case TypeRun:
		return cc.run(m)
	}
	return cc.fail(m.ID, protoErr(CodeUnexpected, "%s is not a request an agent accepts here", m.Type))
}

// cancelOp cancels request id if it is this connection's running one, else
// answers no_such_run.
func (cc *conn) cancelOp(id uint64) error {
	cc.mu.Lock()
	op := cc.op
	cc.mu.Unlock()
	if op == nil || op.id != id {
		return cc.send(TypeError, id, ErrorPayload{Code: CodeNoSuchRun, Message: fmt.Sprintf("no request %d is running on this connection", id)})
	}
	op.cancel()
	return nil
}

// record starts a record request: the engine's trace of p.Tokens tokens,
// sent whole as one frame.
func (cc *conn) record(m *Message) error {
	var p Record
	if err := decodeStrict(m.Payload, &p); err != nil {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "record: %v", err))
	}
	if err := p.Validate(); err != nil {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "record: %v", err))
	}
	return cc.start(m, "record", func(ctx context.Context) (string, any, error) {
		r, ok := cc.s.Engine.(Recorder)
		if !ok {
			return TypeTrace, nil, errNoRecord
		}
		b, err := r.Record(ctx, p.Tokens)
		if err == nil && len(b) == 0 {
			err = errors.New("engine returned an empty trace")
		}
		if n := base64.StdEncoding.EncodedLen(len(b)) + 256; err == nil && n > cc.lim.MaxFrameBytes {
			err = fmt.Errorf("the trace (%d bytes, %d as a frame) exceeds the frame limit of %d bytes: record fewer tokens", len(b), n, cc.lim.MaxFrameBytes)
		}
		return TypeTrace, TracePayload{Parquet: b}, err
	})
}

// run starts a run request: the experiment spec run on the engine, each
// token's sample streamed as it completes (with its series when asked and
// announced), then the Result.
func (cc *conn) run(m *Message) error {
	var p Run
	if pl := bytes.TrimSpace(m.Payload); len(pl) == 0 || string(pl) == "null" {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "run: no payload: %s", runNeedsSpec))
	}
	if err := decodeStrict(m.Payload, &p); err != nil {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "run: %v", err))
	}
	if len(p.Spec) == 0 {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "run: no spec: %s", runNeedsSpec))
	}
	if !isObject(p.Spec) {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "run: spec must be a JSON object"))
	}
	if p.Series && cc.ver < 4 {
		return cc.fail(m.ID, protoErr(CodeBadRequest, "run: series: not in protocol version %d", cc.ver))
	}
	return cc.start(m, "run", func(ctx context.Context) (string, any, error) {
		if p.Series && !slices.Contains(capabilities(cc.s.Engine), CapSeries) {
			return TypeResult, nil, errNoSeries
		}
		var pass int64
		emit := func(ts TokenSample) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if ts.Pass != pass {
				return fmt.Errorf("engine emitted pass %d, expected %d", ts.Pass, pass)
			}
			pass++
			if !p.Series {
				ts = ts.WithoutSeries()
			}
			return cc.send(TypeToken, m.ID, ts)
		}
		res, err := cc.s.Engine.Run(ctx, p.Spec, emit)
		if err == nil && res == nil {
			err = errors.New("engine returned no result")
		}
		return TypeResult, ResultPayload{Result: res}, err
	})
}

// runNeedsSpec says what a run request must carry.
const runNeedsSpec = `a run carries {"spec": {...}}, an experiment spec (docs/experiment-spec.md)`

// start runs one engine request in its own goroutine, or answers busy.
func (cc *conn) start(m *Message, kind string, work func(context.Context) (string, any, error)) error {
	cc.mu.Lock()
	if cc.op != nil {
		id := cc.op.id
		cc.mu.Unlock()
		return cc.send(TypeBusy, m.ID, BusyPayload{Message: fmt.Sprintf("request %d of this connection is still running", id)})
	}
	if holder, ok := cc.s.acquire(fmt.Sprintf("%s %d from %s", kind, m.ID, cc.who)); !ok {
		cc.mu.Unlock()
		return cc.send(TypeBusy, m.ID, BusyPayload{Message: "the engine is busy with " + holder + "; one request at a time"})
	}
	ctx, cancel := context.WithCancel(cc.ctx)
	cc.op = &request{id: m.ID, cancel: cancel}
	cc.ops.Add(1)
	cc.mu.Unlock()
	cc.s.logf("%s: %s %d started", cc.who, kind, m.ID)
	go func() {
		defer cc.ops.Done()
		defer cancel()
		stopBeat := cc.heartbeat(m.ID)
		typ, payload, err := guard(ctx, work)
		stopBeat()
		if err == nil && ctx.Err() != nil {
			err = ctx.Err() // cancelled as it finished: the client asked not to get it
		}
		cc.mu.Lock()
		cc.op = nil
		if cc.ctx.Err() == nil {
			cc.nc.SetReadDeadline(time.Now().Add(cc.lim.IdleTimeout))
		}
		cc.mu.Unlock()
		cc.s.release(err) // before the reply, so a client may start the next request at once
		if err != nil {
			code := errorCode(err)
			cc.s.logf("%s: %s %d ended: %s: %v", cc.who, kind, m.ID, code, err)
			cc.send(TypeError, m.ID, ErrorPayload{Code: code, Message: clip(err.Error(), maxTextBytes)})
			return
		}
		cc.s.logf("%s: %s %d done", cc.who, kind, m.ID)
		cc.send(typ, m.ID, payload)
	}()
	return nil
}

// guard runs work, turning an engine panic into an error.
func guard(ctx context.Context, work func(context.Context) (string, any, error)) (typ string, payload any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("engine panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return work(ctx)
}

// heartbeat sends heartbeat frames for request id until the returned
// function is called (which waits for the sender to stop).
func (cc *conn) heartbeat(id uint64) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(stopped)
		t := time.NewTicker(cc.lim.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if cc.send(TypeHeartbeat, id, Heartbeat{ElapsedNS: int64(time.Since(t0))}) != nil {
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// emptyPayload accepts an absent payload, null or {}.
func emptyPayload(m *Message) error {
	if len(m.Payload) == 0 {
		return nil
	}
	var v struct{}
	if err := decodeStrict(m.Payload, &v); err != nil {
		return protoErr(CodeBadRequest, "%s takes no payload: %v", m.Type, err)
	}
	return nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}
