package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/sim"
)

// TestCheckPasses: the reference agent passes every conformance check.
func TestCheckPasses(t *testing.T) {
	lim := fastLimits()
	lim.HeaderTimeout = 300 * time.Millisecond
	a := startAgent(t, newTestEngine(t, 10), lim)
	// A generous cancel limit: a loaded host may stall the agent for a
	// while; TestCheckCatchesFaults shows the limit bites.
	res := Check(context.Background(), a.target, a.token, CheckOptions{Model: "qwen3-30b-a3b", Calibrate: true, CancelWithin: 10 * time.Second}, nil)
	if len(res) != 15 {
		t.Errorf("%d checks ran, want 15", len(res))
	}
	for _, r := range res {
		if r.Outcome != CheckPass {
			t.Errorf("check %q: %s: %s", r.Name, r.Outcome, r.Detail)
		}
	}
	if t.Failed() {
		return
	}
	waitStats(t, a.srv, func(s Stats) bool { return s.Active == 0 && !s.Running })
}

// unitSlip is a faulty engine: it reports pass times in microseconds while
// the result stays in nanoseconds (a unit mistake a device agent could make).
type unitSlip struct{ *SimEngine }

func (u unitSlip) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	return u.SimEngine.Run(ctx, spec, func(s TokenSample) error {
		s.StartNS, s.TimeNS, s.StallNS = s.StartNS/1000, max(s.TimeNS/1000, 1), s.StallNS/1000
		return emit(s)
	})
}

// stubborn is a faulty engine that ignores cancellation.
type stubborn struct{ *SimEngine }

func (s stubborn) Run(ctx context.Context, spec json.RawMessage, emit func(TokenSample) error) (*sim.Result, error) {
	return s.SimEngine.Run(context.WithoutCancel(ctx), spec, func(ts TokenSample) error { emit(ts); return nil })
}

// TestCheckCatchesFaults: a unit mistake in the samples fails the run check;
// an engine that ignores cancel fails the cancel check; an agent that runs a
// second connection's request during a run fails the busy check. The runs
// are slow (playback 2: about 1.4 s) so that each fault shows by a wide
// margin on a loaded host.
func TestCheckCatchesFaults(t *testing.T) {
	outcome := func(a *testAgent, name string, cancelWithin time.Duration) CheckResult {
		t.Helper()
		for _, r := range Check(context.Background(), a.target, a.token, CheckOptions{Model: "qwen3-30b-a3b", CancelWithin: cancelWithin}, nil) {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no check %q", name)
		return CheckResult{}
	}
	if r := outcome(startAgent(t, unitSlip{newTestEngine(t, 10)}, fastLimits()), "run: stream and result", time.Second); r.Outcome != CheckFail {
		t.Errorf("unit slip: %+v", r)
	} else {
		errgolden.Check(t, "unit slip", r.Err)
	}
	if r := outcome(startAgent(t, stubborn{newTestEngine(t, 2)}, fastLimits()), "cancel: closing a run frees the engine", 300*time.Millisecond); r.Outcome != CheckFail || !errors.Is(r.Err, errNoCancel) {
		t.Errorf("an engine ignoring cancel passed: %+v", r)
	}
	if r := outcome(startSplitAgent(t, newTestEngine(t, 2)), "busy: a second request during a run", time.Second); r.Outcome != CheckFail || !errors.Is(r.Err, errNotBusy) {
		t.Errorf("an agent running two connections' runs at once passed: %+v", r)
	}
}

// TestCheckUnchecked: an agent info request that fails before reaching a lessim
// agent's behaviour (nothing listening, another protocol, the token
// refused) leaves everything unchecked; one that reaches an agent breaking
// the protocol does not.
func TestCheckUnchecked(t *testing.T) {
	ctx := context.Background()
	tok := "0123456789abcdef0123456789abcdef"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "tcp://" + ln.Addr().String()
	ln.Close()
	a := startAgent(t, newTestEngine(t, 10), fastLimits())
	for _, c := range []struct {
		name, target, token string
		want                bool
	}{
		{"nothing listening", closed, tok, true},
		{"another HTTP server", fakeRaw(t, []byte("HTTP/1.1 400 Bad Request\r\n\r\n")), tok, true},
		{"another protocol", fakeRaw(t, []byte("SSH-2.0-OpenSSH_9.6\r\n")), tok, true},
		{"a wrong token", a.target, tok, true},
		{"a malformed info", fakePeer(t, Info{Agent: "x"}), tok, false},
	} {
		rs := Check(ctx, c.target, c.token, CheckOptions{}, nil)
		if len(rs) != 1 || rs[0].Outcome != CheckFail {
			t.Errorf("%s: %+v, want the handshake alone, failed", c.name, rs)
			continue
		}
		if got := rs[0].Unchecked(); got != c.want {
			t.Errorf("%s: Unchecked() = %v, want %v (%v)", c.name, got, c.want, rs[0].Err)
		}
	}
}

// startSplitAgent is a faulty agent: two servers behind one port, sharing
// engine e, get the connections in turn, so a run on one connection does not
// make the next connection's run busy.
func startSplitAgent(t *testing.T, e Engine) *testAgent {
	t.Helper()
	tok, ln := tokenAndListener(t)
	ctx, cancel := context.WithCancel(context.Background())
	halves := [2]*chanListener{{ch: make(chan net.Conn), addr: ln.Addr(), done: make(chan struct{})}, {ch: make(chan net.Conn), addr: ln.Addr(), done: make(chan struct{})}}
	var wg sync.WaitGroup
	for _, h := range halves {
		srv := &Server{Engine: e, Token: tok, Limits: fastLimits(), Agent: "lessim split test"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ctx, h); err != nil {
				t.Errorf("Serve: %v", err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case halves[i%2].ch <- nc:
			case <-ctx.Done():
				nc.Close()
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); ln.Close(); wg.Wait() })
	return &testAgent{target: "tcp://" + ln.Addr().String(), token: tok}
}

// chanListener accepts the connections sent on ch.
type chanListener struct {
	ch   chan net.Conn
	addr net.Addr
	once sync.Once
	done chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case nc := <-l.ch:
		return nc, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *chanListener) Addr() net.Addr { return l.addr }
