package agent

import (
	"context"
	"encoding/json"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/lessim/lessim/devices"
)

// testSpec is a small run: 24 passes of the Qwen3 model on the simulated phone.
const testSpec = `{"model": {"name": "qwen3-30b-a3b"}, "policy": {"name": "les"}, "cache": {"size": "25%"},
	"trace": {"synthetic": {"tokens": 24, "seed": 3}}}`

// newTestEngine returns a SimEngine simulating the iPhone 17 Pro Max.
func newTestEngine(t testing.TB, playback float64) *SimEngine {
	t.Helper()
	p, err := devices.LoadProfile("iphone-17-pro-max")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewSimEngine(p, "test")
	if err != nil {
		t.Fatal(err)
	}
	e.Playback = playback
	return e
}

// testAgent is a running agent on a loopback port.
type testAgent struct {
	srv    *Server
	target string
	token  string
	stop   func()
}

// tokenAndListener is a new token and a loopback listener on a free port.
func tokenAndListener(t testing.TB) (string, net.Listener) {
	t.Helper()
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	return tok, ln
}

// startAgent serves e on 127.0.0.1 until the test ends (or stop is called),
// then checks the server returned.
func startAgent(t testing.TB, e Engine, lim Limits) *testAgent {
	t.Helper()
	tok, ln := tokenAndListener(t)
	srv := &Server{Engine: e, Token: tok, Limits: lim, Agent: "lessim test"}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if err := srv.Serve(ctx, ln); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	// stop ends the agent and waits for Serve to return (any goroutine may call it).
	stop := func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return within 10 s of its context ending")
		}
	}
	t.Cleanup(stop)
	return &testAgent{srv: srv, target: "tcp://" + ln.Addr().String(), token: tok, stop: stop}
}

// fastLimits are limits short enough for tests.
func fastLimits() Limits {
	l := DefaultLimits()
	l.HandshakeTimeout, l.FrameTimeout, l.IdleTimeout, l.Heartbeat = 2*time.Second, 2*time.Second, 30*time.Second, 100*time.Millisecond
	return l
}

// rawConn is a protocol-level connection for tests that break the rules.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, a *testAgent) *rawConn {
	t.Helper()
	tg, err := ParseTarget(a.target)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.DialTimeout("tcp", net.JoinHostPort(tg.Host, itoa(int(tg.Port))), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func (r *rawConn) send(typ string, id uint64, payload any) {
	r.t.Helper()
	var raw json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			r.t.Fatal(err)
		}
		raw = b
	}
	r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := WriteFrame(r.nc, &Message{Type: typ, ID: id, Payload: raw}, 0); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) hello(token string) {
	r.t.Helper()
	r.send(TypeHello, 0, Hello{ProtocolVersion: ProtocolVersion, Token: token, Client: "raw test"})
	if m := r.read(); m.Type != TypeWelcome {
		r.t.Fatalf("hello answered with %s %s", m.Type, m.Payload)
	}
}

// read reads one frame, failing the test after 5 s.
func (r *rawConn) read() *Message {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	m, err := ReadFrame(r.nc, 0)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return m
}

// readSkipping reads the next frame that is not a heartbeat.
func (r *rawConn) readSkipping() *Message {
	r.t.Helper()
	for {
		if m := r.read(); m.Type != TypeHeartbeat {
			return m
		}
	}
}

// expectError reads an error frame with code, then (fatal) the connection's end.
func (r *rawConn) expectError(code string, fatal bool) {
	r.t.Helper()
	m := r.readSkipping()
	var p ErrorPayload
	if m.Type != TypeError || json.Unmarshal(m.Payload, &p) != nil || p.Code != code {
		r.t.Fatalf("got %s %s, want error %s", m.Type, m.Payload, code)
	}
	if fatal {
		r.expectClosed()
	}
}

func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	if n, err := r.nc.Read(b[:]); err == nil || isTimeout(err) {
		r.t.Fatalf("connection still open after a fatal error (read %d bytes, %v)", n, err)
	}
}

// settle waits until the goroutine count is back to base (the test's own
// leftovers excluded), failing after 5 s.
func settle(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want <= %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStats polls the server's counters until ok, failing after 5 s.
func waitStats(t testing.TB, s *Server, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := s.Stats()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("server stats never reached the expected state: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countGoroutines is runtime.NumGoroutine (a name for what settle compares).
func countGoroutines() int { return runtime.NumGoroutine() }
