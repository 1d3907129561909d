package agent

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawFrame is a length header and body as given (no validation).
func rawFrame(body string) []byte {
	b := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	copy(b[4:], body)
	return b
}

// TestGarbage: every malformed frame, before or after the handshake, gets an
// error frame with its code and the connection closed, never a hang.
func TestGarbage(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	hello := func(tok string) string {
		b, _ := json.Marshal(Message{Type: TypeHello, Payload: json.RawMessage(`{"protocol_version":1,"token":"` + tok + `","client":"x"}`)})
		return string(b)
	}
	for _, tc := range []struct {
		name      string
		handshake bool // send a valid hello first
		bytes     []byte
		code      string
	}{
		{"not json", false, rawFrame("GET / HTTP/1.1\r\n\r\n"), CodeBadFrame},
		{"empty frame", false, rawFrame(""), CodeBadFrame},
		{"json array", false, rawFrame(`[1,2]`), CodeBadFrame},
		{"unknown envelope field", false, rawFrame(`{"type":"hello","id":0,"extra":1}`), CodeBadFrame},
		{"two values", false, rawFrame(hello(a.token) + `{}`), CodeBadFrame},
		{"unknown type", false, rawFrame(`{"type":"exec","id":1}`), CodeUnknownType},
		{"first frame not hello", false, rawFrame(`{"type":"run","id":1,"payload":{"spec":{}}}`), CodeUnexpected},
		{"hello payload garbage", false, rawFrame(`{"type":"hello","id":0,"payload":{"protocol_version":"one"}}`), CodeBadRequest},
		{"hello without payload", false, rawFrame(`{"type":"hello","id":0}`), CodeBadRequest},
		{"oversize header", false, []byte{0x01, 0x00, 0x00, 0x01}, CodeTooLarge},
		{"max uint32 header", false, []byte{0xff, 0xff, 0xff, 0xff}, CodeTooLarge},
		{"hello twice", true, rawFrame(hello(a.token)), CodeUnexpected},
		{"agent-only type", true, rawFrame(`{"type":"result","id":3,"payload":{}}`), CodeUnexpected},
		{"run spec not object", true, rawFrame(`{"type":"run","id":3,"payload":{"spec":[1]}}`), CodeBadRequest},
		{"run unknown field", true, rawFrame(`{"type":"run","id":3,"payload":{"spec":{},"shell":"rm -rf /"}}`), CodeBadRequest},
		{"ping with payload", true, rawFrame(`{"type":"ping","id":3,"payload":{"x":1}}`), CodeBadRequest},
		{"load_model empty", true, rawFrame(`{"type":"load_model","id":3,"payload":{"model":""}}`), CodeBadRequest},
		{"negative id", true, rawFrame(`{"type":"ping","id":-1}`), CodeBadFrame},
		{"oversize after hello", true, []byte{0x7f, 0xff, 0xff, 0xff}, CodeTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, a)
			if tc.handshake {
				r.hello(a.token)
			}
			r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := r.nc.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			r.expectError(tc.code, true)
		})
	}
	if st := a.srv.Stats(); st.Requests != 0 {
		t.Errorf("garbage started requests: %+v", st)
	}
}

// TestTruncatedFrame: a body that never completes is cut at the frame
// timeout, with an error frame.
func TestTruncatedFrame(t *testing.T) {
	lim := fastLimits()
	lim.FrameTimeout = 200 * time.Millisecond
	a := startAgent(t, newTestEngine(t, 0), lim)
	r := dialRaw(t, a)
	r.hello(a.token)
	r.nc.Write(rawFrame(`{"type":"ping","id":1}`)[:10])
	r.expectError(CodeTimeout, true)
}

// TestHandshakeAndIdleTimeouts: a silent new connection and an idle one are
// closed with an error frame.
func TestHandshakeAndIdleTimeouts(t *testing.T) {
	lim := fastLimits()
	lim.HandshakeTimeout, lim.IdleTimeout = 200*time.Millisecond, 300*time.Millisecond
	a := startAgent(t, newTestEngine(t, 0), lim)
	r := dialRaw(t, a)
	r.expectError(CodeTimeout, true)
	r2 := dialRaw(t, a)
	r2.hello(a.token)
	r2.expectError(CodeTimeout, true)
}

// TestCancelUnknown: cancel naming no running request is answered and
// harmless.
func TestCancelUnknown(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	r := dialRaw(t, a)
	r.hello(a.token)
	r.send(TypeCancel, 42, nil)
	r.expectError(CodeNoSuchRun, false)
	r.send(TypePing, 43, nil)
	if m := r.read(); m.Type != TypePong || m.ID != 43 {
		t.Fatalf("got %s %d", m.Type, m.ID)
	}
}

// blackhole relays between a client and the agent until frozen, then keeps
// both connections open and forwards nothing: an agent that stops answering.
type blackhole struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen bool
	conns  []net.Conn
}

func newBlackhole(t *testing.T, upstream string) *blackhole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c, u)
			b.mu.Unlock()
			go b.pipe(u, c)
			go b.pipe(c, u)
		}
	}()
	return b
}

func (b *blackhole) pipe(dst, src net.Conn) {
	buf := make([]byte, 512)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		b.mu.Lock()
		frozen := b.frozen
		b.mu.Unlock()
		if frozen {
			continue // swallow
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

func (b *blackhole) freeze() { b.mu.Lock(); b.frozen = true; b.mu.Unlock() }

// TestStalledAgent: an agent that stops answering mid-run (here: the link
// goes silent) fails the client within its silence limit, with ErrSilent.
func TestStalledAgent(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 5), fastLimits())
	b := newBlackhole(t, strings.TrimPrefix(a.target, "tcp://"))
	c, err := DialWith(context.Background(), "tcp://"+b.ln.Addr().String(), a.token, Options{Silence: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var frozeAt time.Time
	_, err = c.Run(context.Background(), json.RawMessage(testSpec), func(s TokenSample) error {
		if s.Pass == 0 {
			frozeAt = time.Now()
			b.freeze()
		}
		return nil
	})
	if !errors.Is(err, ErrSilent) {
		t.Fatalf("%v, want ErrSilent", err)
	}
	if d := time.Since(frozeAt); d > 5*time.Second {
		t.Errorf("noticed after %v with a 500 ms limit", d)
	}
	if err := c.Ping(context.Background()); err == nil {
		t.Error("connection still usable after the agent went silent")
	}
}

// TestHandshakeSilent: an endpoint that accepts but never answers the hello
// fails Dial within its timeout.
func TestHandshakeSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	start := time.Now()
	_, err = DialWith(context.Background(), "tcp://"+ln.Addr().String(), strings.Repeat("a", 32), Options{DialTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrSilent) {
		t.Fatalf("%v, want ErrSilent", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestListenLoopbackOnly: non-loopback listen addresses need allowRemote.
func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0", "7070"} {
		if ln, err := Listen(addr, false); err == nil {
			ln.Close()
			t.Errorf("%s: listened without allowRemote", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := Listen(addr, false)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

// TestServerRefusesBadConfig: no engine, a malformed token or bad limits
// stop Serve before it accepts anything.
func TestServerRefusesBadConfig(t *testing.T) {
	e := newTestEngine(t, 0)
	tok, _ := NewToken()
	for _, s := range []*Server{{Token: tok}, {Engine: e, Token: "secret"}, {Engine: e, Token: tok, Limits: Limits{MaxFrameBytes: 10}}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Serve(context.Background(), ln); err == nil {
			t.Errorf("%+v: served", s)
		}
	}
}

// TestParseTarget pins the accepted target forms.
func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://127.0.0.1:7070":                             "tcp://127.0.0.1:7070",
		"tcp://[::1]:7070":                                 "tcp://[::1]:7070",
		"usb://00008130-001A2B3C4D5E6F70:7070":             "usb://00008130-001A2B3C4D5E6F70:7070",
		"usb://0123456789abcdef0123456789abcdef01234567:1": "usb://0123456789abcdef0123456789abcdef01234567:1",
	} {
		tg, err := ParseTarget(in)
		if err != nil || tg.String() != want {
			t.Errorf("%s: %v %v", in, tg, err)
		}
	}
	for _, in := range []string{"", "127.0.0.1:7070", "http://x:1", "tcp://x", "tcp://:7070", "tcp://x:0", "tcp://x:70000", "usb://zz:1", "usb://:1", "usb://ab/../c:1"} {
		if _, err := ParseTarget(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestToken: tokens are 128 random bits in hex, and differ.
func TestToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if !ValidToken(a) || !ValidToken(b) || a == b {
		t.Fatalf("%q %q", a, b)
	}
	if ValidToken("xyz") || ValidToken(strings.Repeat("g", 32)) {
		t.Fatal("accepted a malformed token")
	}
}
