package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/errgolden"
)

// TestWire: every request that breaks a rule gets the documented status and
// error code, and none reaches the engine.
func TestWire(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	bearer, other := "Bearer "+a.token, "Bearer "+strings.Repeat("0", 32)
	run := `{"spec": {"model": {"name": "qwen3-30b-a3b"}, "trace": {"synthetic": {"tokens": 2}}}}`
	for _, tc := range []struct {
		name, method, path, auth, body string
		status                         int
		code                           string
	}{
		{"no token", "GET", PathAgent, "", "", 401, CodeAuth},
		{"wrong token", "POST", PathRun, other, run, 401, CodeAuth},
		{"token with a byte more", "POST", PathRun, bearer + "0", run, 401, CodeAuth},
		{"another scheme", "POST", PathRun, "Basic " + a.token, run, 401, CodeAuth},
		{"bearer in lower case", "POST", PathRun, "bearer " + a.token, run, 401, CodeAuth},
		{"wrong token, unknown path", "GET", "/etc/passwd", other, "", 401, CodeAuth},
		{"not json", "POST", PathRun, bearer, "GET / HTTP/1.1", 400, CodeBadRequest},
		{"two values", "POST", PathRun, bearer, run + "{}", 400, CodeBadRequest},
		{"unknown field", "POST", PathRun, bearer, `{"spec": {}, "shell": "rm -rf /"}`, 400, CodeBadRequest},
		{"no spec", "POST", PathRun, bearer, `{}`, 400, CodeBadRequest},
		{"spec not an object", "POST", PathRun, bearer, `{"spec": [1]}`, 400, CodeBadRequest},
		{"series not a bool", "POST", PathRun, bearer, `{"spec": {}, "series": "yes"}`, 400, CodeBadRequest},
		{"empty body", "POST", PathCalibrate, bearer, ``, 400, CodeBadRequest},
		{"empty model", "POST", PathLoadModel, bearer, `{"model": ""}`, 400, CodeBadRequest},
		{"record 0 tokens", "POST", PathRecord, bearer, `{"tokens": 0}`, 400, CodeBadRequest},
		{"record too many", "POST", PathRecord, bearer, `{"tokens": 5000}`, 400, CodeBadRequest},
		{"GET a request", "GET", PathRun, bearer, "", 405, CodeBadRequest},
		{"POST the info", "POST", PathAgent, bearer, "{}", 405, CodeBadRequest},
		{"unknown path", "GET", "/v1/exec", bearer, "", 404, CodeNotFound},
	} {
		status, lines := ask(t, a, tc.method, tc.path, tc.auth, tc.body)
		if status != tc.status || len(lines) != 1 || errorCodeOf(lines) != tc.code {
			t.Errorf("%s: status %d, lines %+v; want %d, error %s", tc.name, status, lines, tc.status, tc.code)
		}
	}
	if _, lines := ask(t, a, "POST", PathRun, bearer, "{}"); lines[0].Error.Code != CodeBadRequest {
		t.Errorf("a run without a spec: %+v", lines[0].Error)
	} else {
		errgolden.Check(t, "no spec", errors.New(lines[0].Error.Message))
	}
	if st := a.srv.Stats(); st.Requests != 0 {
		t.Errorf("refused requests reached the engine: %+v", st)
	}
}

// TestStreamLines: a run's answer is 200, application/x-ndjson: token
// lines with heartbeats between them while passes take long, then the
// result; an engine's refusal before any line is 422 with one error line.
func TestStreamLines(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 1), fastLimits())
	status, lines := ask(t, a, "POST", PathRun, "Bearer "+a.token, `{"spec": `+testSpec+`}`)
	var tokens, beats int
	for _, l := range lines[:len(lines)-1] {
		tokens += map[bool]int{true: 1}[l.Token != nil]
		beats += map[bool]int{true: 1}[l.Heartbeat != nil]
	}
	if status != 200 || tokens != 24 || beats == 0 || tokens+beats != len(lines)-1 || lines[len(lines)-1].Result == nil {
		t.Errorf("status %d, %d tokens and %d heartbeats of %d lines, last %+v", status, tokens, beats, len(lines), lines[len(lines)-1])
	}
	status, lines = ask(t, a, "POST", PathRun, "Bearer "+a.token, `{"spec": {"policy": {"name": "nope"}}}`)
	if status != 422 || len(lines) != 1 || errorCodeOf(lines) != CodeInvalidSpec {
		t.Errorf("an invalid spec: status %d, %+v", status, lines)
	}
}

// rawRequest writes head (and then body, unless nil) on a new connection
// and returns what the agent answers until it closes (or 10 s pass).
func rawRequest(t *testing.T, a *testAgent, head string, body []byte) string {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(a.target, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	io.WriteString(nc, head)
	if body != nil {
		nc.Write(body)
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(nc)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the agent kept the connection open 10 s: %q", b)
	}
	return string(b)
}

// TestLimits: a body above the limit is 413 too_large (announced or
// chunked), after the token only; a slow body is 408 timeout; headers that
// never end are cut at the header timeout without an answer; a header block
// above its limit is 431.
func TestLimits(t *testing.T) {
	lim := fastLimits()
	lim.HeaderTimeout, lim.ReadTimeout = 300*time.Millisecond, 600*time.Millisecond
	a := startAgent(t, newTestEngine(t, 0), lim)
	post := "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n"
	big := make([]byte, lim.MaxBodyBytes+1)
	for _, tc := range []struct {
		name, head string
		body       []byte
		want       string
	}{
		{"announced", fmt.Sprintf(post, a.token, "Content-Length: 99999999\r\n"), []byte("{"), "413"},
		{"chunked", fmt.Sprintf(post, a.token, "Transfer-Encoding: chunked\r\n"), append(fmt.Appendf(nil, "%x\r\n", len(big)), big...), "413"},
		{"wrong token first", fmt.Sprintf(post, strings.Repeat("0", 32), "Content-Length: 99999999\r\n"), []byte("{"), "401"},
		{"slow body", fmt.Sprintf(post, a.token, "Content-Length: 100\r\n"), []byte("{"), "408"},
		{"slow headers", "POST /v1/run HTTP/1.1\r\nHost: x\r\n", nil, ""},
		{"silent", "", nil, ""},
		{"huge headers", fmt.Sprintf(post, a.token, "X-Pad: "+strings.Repeat("a", 64<<10)+"\r\n"), nil, "431"},
	} {
		got := rawRequest(t, a, tc.head, tc.body)
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, "HTTP/1.1 "+tc.want) {
			t.Errorf("%s: got %q, want status %q", tc.name, clip(got, 200), tc.want)
		}
		if code := map[string]string{"413": CodeTooLarge, "401": CodeAuth, "408": CodeTimeout}[tc.want]; code != "" && !strings.Contains(got, `"code":"`+code+`"`) {
			t.Errorf("%s: no error %s in %q", tc.name, code, clip(got, 300))
		}
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
	for _, s := range []*Server{{Token: tok}, {Engine: e, Token: "secret"}, {Engine: e, Token: tok, Limits: Limits{MaxBodyBytes: 10}}} {
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
}

// TestDialSilent: an endpoint that accepts but never answers fails Dial
// within its timeout.
func TestDialSilent(t *testing.T) {
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
