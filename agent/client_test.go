package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakePeer is a scripted agent for the client's error paths: it answers
// GET PathAgent with info (a JSON value, or raw text when a string) and
// POST PathRun with the lines of run.
func fakePeer(t *testing.T, info any, run ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == PathRun {
			w.Write([]byte(strings.Join(run, "\n") + "\n"))
			return
		}
		if s, ok := info.(string); ok {
			w.Write([]byte(s))
			return
		}
		json.NewEncoder(w).Encode(info)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "tcp://" + ln.Addr().String()
}

// fakeRaw is a peer that answers anything with the bytes b and closes.
func fakeRaw(t *testing.T, b []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Read(make([]byte, 4096))
			c.Write(b)
			c.Close()
		}
	}()
	return "tcp://" + ln.Addr().String()
}

func goodInfo() Info {
	return Info{Agent: "fake", Capabilities: []string{CapRun},
		Device: DeviceFacts{Kind: KindMeasured, Model: "x", OS: "y", CPU: "z", RAMBytes: 1 << 30, PageBytes: 16384, Engine: "e", EngineVersion: "1"},
		Limits: DefaultLimits()}
}

// TestClientRejectsBadAgents: a malformed info, a peer that is not an
// agent, and a token sample with impossible units are clear errors.
func TestClientRejectsBadAgents(t *testing.T) {
	ctx := context.Background()
	tok := "0123456789abcdef0123456789abcdef"
	bad := goodInfo()
	bad.Device.PageBytes = 1000
	if _, err := Dial(ctx, fakePeer(t, bad), tok); !errors.Is(err, ErrBadAgent) {
		t.Errorf("page size not a power of two: %v", err)
	}
	for name, target := range map[string]string{
		"garbage":         fakePeer(t, "garbage"),
		"another service": fakePeer(t, map[string]int{"version": 2}),
		"not HTTP":        fakeRaw(t, []byte("SSH-2.0-OpenSSH_9.6\r\n")),
		"an HTTP 404":     fakeRaw(t, []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found")),
	} {
		if _, err := Dial(ctx, target, tok); !errors.Is(err, ErrNotAgent) {
			t.Errorf("%s: %v, want %v", name, err, ErrNotAgent)
		}
	}
	for name, lines := range map[string][]string{
		"stall above time":  {`{"token":{"pass":0,"tokens":1,"start_ns":0,"time_ns":10,"stall_ns":20}}`},
		"two fields":        {`{"heartbeat":{"elapsed_ns":1},"token":{"pass":0,"tokens":1,"start_ns":0,"time_ns":10,"stall_ns":2}}`},
		"not json":          {`<html>`},
		"no final line":     {`{"heartbeat":{"elapsed_ns":1}}`},
		"wrong final line":  {`{"model":{"name":"x","arch":"y","layers":1,"experts":2,"top_k":1,"total_expert_bytes":1}}`},
		"passes disagree":   {`{"token":{"pass":0,"tokens":1,"start_ns":0,"time_ns":10,"stall_ns":2}}`, `{"result":{"passes":3}}`},
		"pass out of order": {`{"token":{"pass":1,"tokens":1,"start_ns":0,"time_ns":10,"stall_ns":2}}`},
	} {
		c, err := Dial(ctx, fakePeer(t, goodInfo(), lines...), tok)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Run(ctx, json.RawMessage(`{}`), nil); !errors.Is(err, ErrBadAgent) {
			t.Errorf("%s: %v, want %v", name, err, ErrBadAgent)
		}
		c.Close()
	}
}
