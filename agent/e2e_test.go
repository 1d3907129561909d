package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
)

// TestRunMatchesLocal: a run through the agent gives exactly the Result of
// the same spec simulated in process, and the stream carries every pass.
func TestRunMatchesLocal(t *testing.T) {
	e := newTestEngine(t, 0)
	a := startAgent(t, e, fastLimits())
	var samples []TokenSample
	res, facts, err := runRemote(context.Background(), a.target, a.token, json.RawMessage(testSpec), func(s TokenSample) error {
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if facts.Kind != KindSimulated || facts.Model != "iphone-17-pro-max" || facts.PageBytes != 16384 {
		t.Errorf("facts: %+v", facts)
	}

	r, err := decodeSimSpec(json.RawMessage(testSpec), e.dev, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Run()
	if err != nil {
		t.Fatal(err)
	}
	local := out.Result
	series := local.Series
	local.Series = nil
	if !reflect.DeepEqual(res, local) {
		a, _ := json.Marshal(res)
		b, _ := json.Marshal(local)
		t.Fatalf("remote result differs from local:\n%s\n%s", a, b)
	}
	if len(samples) != len(series) || int64(len(samples)) != res.Passes {
		t.Fatalf("%d samples, %d local passes, result %d", len(samples), len(series), res.Passes)
	}
	var tokens int64
	for i, s := range samples {
		p := series[i]
		if s.StartNS != p.StartNS || s.TimeNS != p.TimeNS || s.StallNS != p.StallNS || s.Tokens != p.Accepted || s.Pass != int64(i) {
			t.Fatalf("sample %d = %+v, local pass %+v", i, s, p)
		}
		tokens += int64(s.Tokens)
	}
	if tokens != res.Tokens {
		t.Errorf("samples carry %d tokens, result %d", tokens, res.Tokens)
	}
}

// TestLoadModelAndCalibrate: load_model sets the default model of later
// runs; calibrate returns a profile that parses.
func TestLoadModelAndCalibrate(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	ctx := context.Background()
	c, err := Dial(ctx, a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, json.RawMessage(`{"trace": {"synthetic": {"tokens": 4}}}`), nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("run without a model: %v", err)
	} else {
		errgolden.Check(t, "no model", err)
	}
	info, err := c.LoadModel(ctx, "qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	if info.Layers != 48 || info.Experts != 128 || info.TopK != 8 {
		t.Errorf("model info %+v", info)
	}
	if _, err := c.LoadModel(ctx, "/etc/passwd"); !errors.Is(err, ErrRefused) {
		t.Errorf("loading a path: %v", err)
	}
	res, err := c.Run(ctx, json.RawMessage(`{"trace": {"synthetic": {"tokens": 4}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "qwen3-30b-a3b" || res.Tokens != 4 {
		t.Errorf("result %s, %d tokens", res.Model, res.Tokens)
	}
	y, err := c.Calibrate(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := devices.ParseProfile(y, "calibration")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Device(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Calibrate(ctx, json.RawMessage(`{"read_sizes": [1]}`)); !errors.Is(err, ErrRefused) {
		t.Errorf("calibrate with options the engine does not take: %v", err)
	}
	if _, err := c.Run(ctx, json.RawMessage(`{"trace": {"path": "/etc/passwd"}}`), nil); !errors.Is(err, ErrRefused) {
		t.Errorf("a spec naming a file: %v", err)
	} else {
		errgolden.Check(t, "file", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("connection unusable after refused requests: %v", err)
	}
}

// TestWrongToken: a wrong or empty token gets auth and nothing else.
func TestWrongToken(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	other, _ := NewToken()
	for _, tok := range []string{other, "", a.token[:31], a.token + "0"} {
		_, err := Dial(context.Background(), a.target, tok)
		if !errors.Is(err, ErrAuth) {
			t.Errorf("token %q: %v, want auth", tok, err)
		}
	}
	if st := a.srv.Stats(); st.Requests != 0 {
		t.Errorf("requests ran without the token: %+v", st)
	}
}

// TestUnreachable: nothing listening gives ErrUnreachable quickly.
func TestUnreachable(t *testing.T) {
	ln := startAgent(t, newTestEngine(t, 0), fastLimits())
	target := ln.target
	ln.stop() // the port is now closed
	start := time.Now()
	_, err := DialWith(context.Background(), target, ln.token, Options{DialTimeout: 2 * time.Second})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("%v, want unreachable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestBusy: while one client runs, another's run gets busy, and so does a
// second run on the same connection; afterwards the engine is free again.
func TestBusy(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 20), fastLimits())
	ctx := context.Background()
	c1, err := Dial(ctx, a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		once := false
		_, err := c1.Run(ctx, json.RawMessage(testSpec), func(TokenSample) error {
			if !once {
				once = true
				close(first)
			}
			return nil
		})
		done <- err
	}()
	<-first
	c2, err := Dial(ctx, a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.Run(ctx, json.RawMessage(testSpec), nil)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second client: %v, want busy naming the running request", err)
	}
	if err := c2.Ping(ctx); err != nil {
		t.Errorf("a busy answer must leave the connection usable: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("first run: %v", err)
	}
	if _, err := c2.Run(ctx, json.RawMessage(`{"model": {"name": "qwen3-30b-a3b"}, "trace": {"synthetic": {"tokens": 2}}}`), nil); err != nil {
		t.Fatalf("after the first run: %v", err)
	}
}

// TestCancel: cancelling the context mid-run stops the run on the agent,
// which confirms; the connection stays usable.
func TestCancel(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 5), fastLimits())
	c, err := Dial(context.Background(), a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err = c.Run(ctx, json.RawMessage(testSpec), func(TokenSample) error {
		if n++; n == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want cancelled", err)
	}
	st := waitStats(t, a.srv, func(s Stats) bool { return !s.Running && s.Cancelled == 1 })
	if st.Completed != 0 {
		t.Errorf("stats %+v", st)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("after cancel: %v", err)
	}
	// An emit error cancels too, and is what Run returns.
	stopErr := errors.New("enough")
	if _, err := c.Run(context.Background(), json.RawMessage(testSpec), func(TokenSample) error { return stopErr }); !errors.Is(err, stopErr) {
		t.Fatalf("emit error: %v", err)
	}
	waitStats(t, a.srv, func(s Stats) bool { return !s.Running && s.Cancelled == 2 })
}

// TestDisconnectMidRun: a client vanishing mid-run cancels the run on the
// agent and leaves no goroutine behind; the engine is free for the next one.
func TestDisconnectMidRun(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 5), fastLimits())
	time.Sleep(50 * time.Millisecond)
	base := countGoroutines()
	nc, err := net.Dial("tcp", strings.TrimPrefix(a.target, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(Run{Spec: json.RawMessage(testSpec)})
	fmt.Fprintf(nc, "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", a.token, len(body), body)
	br := bufio.NewReader(nc)
	for l := ""; !strings.HasPrefix(l, `{"token"`); {
		if l, err = br.ReadString('\n'); err != nil {
			t.Fatalf("no token line: %v", err)
		}
	}
	nc.Close()
	st := waitStats(t, a.srv, func(s Stats) bool { return s.Active == 0 && !s.Running })
	if st.Cancelled != 1 || st.Completed != 0 {
		t.Errorf("run not cancelled: %+v", st)
	}
	settle(t, base)
	if _, _, err := runRemote(context.Background(), a.target, a.token, json.RawMessage(`{"model": {"name": "qwen3-30b-a3b"}, "trace": {"synthetic": {"tokens": 2}}}`), nil); err != nil {
		t.Fatalf("next run: %v", err)
	}
}

// TestShutdownMidRun: stopping the agent cancels a running request, tells
// the client and returns.
func TestShutdownMidRun(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 5), fastLimits())
	c, err := Dial(context.Background(), a.target, a.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Run(context.Background(), json.RawMessage(testSpec), func(s TokenSample) error {
		if s.Pass == 1 {
			go a.stop()
		}
		return nil
	})
	if err == nil {
		t.Fatal("run survived the agent stopping")
	}
	a.stop()
	waitStats(t, a.srv, func(s Stats) bool { return s.Cancelled == 1 && s.Active == 0 })
}
