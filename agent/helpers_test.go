package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/sim"
)

func TestMain(m *testing.M) { os.Exit(errgolden.Main(m)) }

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
	l.HeaderTimeout, l.ReadTimeout, l.WriteTimeout, l.Heartbeat = 2*time.Second, 2*time.Second, 2*time.Second, 100*time.Millisecond
	return l
}

// ask sends one request to the agent as given (auth: the whole
// Authorization header, "" none) and returns the status and the lines of
// the answer, decoded strictly.
func ask(t testing.TB, a *testAgent, method, path, auth, body string) (int, []Line) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+strings.TrimPrefix(a.target, "tcp://")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []Line
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l Line
		if err := decodeStrict(sc.Bytes(), &l); err != nil || l.fields() != 1 {
			t.Fatalf("%s %s: line %q: %v", method, path, sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return resp.StatusCode, lines
}

// errorCodeOf is the code of the last line if it is an error, else "".
func errorCodeOf(lines []Line) string {
	if len(lines) == 0 || lines[len(lines)-1].Error == nil {
		return ""
	}
	return lines[len(lines)-1].Error.Code
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

// runRemote dials target, runs spec there (Client.Run) and hangs up; it
// returns the result and the device facts the agent reported.
func runRemote(ctx context.Context, target, token string, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, DeviceFacts, error) {
	c, err := Dial(ctx, target, token)
	if err != nil {
		return nil, DeviceFacts{}, err
	}
	defer c.Close()
	res, err := c.Run(ctx, spec, emit)
	return res, c.Facts(), err
}
