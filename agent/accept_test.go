package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// flakyListener fails its first n Accepts with err, then accepts.
type flakyListener struct {
	net.Listener
	mu  sync.Mutex
	n   int
	err error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.n > 0 {
		l.n--
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// syncBuffer is a log safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestServeRetriesTemporaryAccept: running out of file descriptors
// (EMFILE, ENFILE) fails Accept; the agent logs it, backs off and keeps
// serving instead of exiting. Any other Accept error still ends Serve.
func TestServeRetriesTemporaryAccept(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		ln, err := Listen("127.0.0.1:0", false)
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := NewToken()
		var log syncBuffer
		srv := &Server{Engine: newTestEngine(t, 0), Token: tok, Limits: fastLimits(), Agent: "lessim test", Log: &log}
		fl := &flakyListener{Listener: ln, n: 4, err: &net.OpError{Op: "accept", Net: "tcp", Err: fmt.Errorf("accept4: %w", errno)}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, fl) }()
		c, err := DialWith(ctx, "tcp://"+ln.Addr().String(), tok, Options{})
		if err != nil {
			t.Fatalf("%v: dial after the failed accepts: %v", errno, err)
		}
		if err := c.Ping(ctx); err != nil {
			t.Errorf("%v: ping: %v", errno, err)
		}
		c.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%v: Serve: %v", errno, err)
		}
		if got := strings.Count(log.String(), "retrying in"); got != 4 {
			t.Errorf("%v: %d retry lines, want 4:\n%s", errno, got, log.String())
		}
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := NewToken()
	srv := &Server{Engine: newTestEngine(t, 0), Token: tok}
	bad := errors.New("listener broken")
	if err := srv.Serve(context.Background(), &flakyListener{Listener: ln, n: 1, err: bad}); !errors.Is(err, bad) {
		t.Errorf("a permanent Accept error: Serve returned %v", err)
	}
}

// TestServeMaxConns: past MaxConns a connection gets a busy frame and is
// closed, with a log line; the held ones keep working.
func TestServeMaxConns(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := NewToken()
	var log syncBuffer
	srv := &Server{Engine: newTestEngine(t, 0), Token: tok, Limits: fastLimits(), Agent: "lessim test", Log: &log, MaxConns: 2}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, ln)
	target := "tcp://" + ln.Addr().String()
	var held []*Client
	for range 2 {
		c, err := DialWith(ctx, target, tok, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	_, err = DialWith(ctx, target, tok, Options{})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "the agent holds 2 connections already") {
		t.Errorf("third connection: %v", err)
	}
	if err := held[0].Ping(ctx); err != nil {
		t.Errorf("a held connection: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(log.String(), "refused: the agent holds 2 connections already") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "refused: the agent holds 2 connections already") {
		t.Errorf("no log line for the refused connection:\n%s", log.String())
	}
	ln2, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Server{Engine: srv.Engine, Token: tok, MaxConns: -1}).Serve(ctx, ln2); err == nil {
		t.Error("MaxConns -1 accepted")
	}
}

// TestRunWithoutSpec: a run with no payload, or a payload without a spec,
// is refused naming the missing spec (not "run: EOF").
func TestRunWithoutSpec(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	for i, payload := range []any{nil, map[string]any{}} {
		r := dialRaw(t, a)
		r.hello(a.token)
		r.send(TypeRun, uint64(5+i), payload)
		m := r.readSkipping()
		var p ErrorPayload
		if m.Type != TypeError || json.Unmarshal(m.Payload, &p) != nil || p.Code != CodeBadRequest || !strings.Contains(p.Message, `a run carries {"spec": {...}}`) {
			t.Errorf("payload %v: got %s %s", payload, m.Type, m.Payload)
		}
	}
}
