package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// fakePeer is a scripted agent for the client's error paths: it reads the
// hello, then answers each frame it reads with the next reply of script.
func fakePeer(t *testing.T, script ...[]byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for _, reply := range script {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := ReadFrame(c, 0); err != nil {
				return
			}
			if _, err := c.Write(reply); err != nil {
				return
			}
		}
		time.Sleep(time.Second)
	}()
	return "tcp://" + ln.Addr().String()
}

func frameOf(t *testing.T, typ string, id uint64, payload any) []byte {
	b, err := json.Marshal(Message{Type: typ, ID: id, Payload: mustJSON(t, payload)})
	if err != nil {
		t.Fatal(err)
	}
	return rawFrame(string(b))
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func goodWelcome(version int) Welcome {
	return Welcome{ProtocolVersion: version, Agent: "fake", Capabilities: []string{CapRun},
		Device: DeviceFacts{Kind: KindMeasured, Model: "x", OS: "y", CPU: "z", RAMBytes: 1 << 30, PageBytes: 16384, Engine: "e", EngineVersion: "1"},
		Limits: DefaultLimits().wire()}
}

// TestClientRejectsBadAgents: a welcome of another version, a malformed
// welcome, and a token sample with impossible units are clear errors.
func TestClientRejectsBadAgents(t *testing.T) {
	ctx := context.Background()
	tok := "0123456789abcdef0123456789abcdef"
	if _, err := Dial(ctx, fakePeer(t, frameOf(t, TypeWelcome, 0, goodWelcome(ProtocolVersion+1))), tok); !errors.Is(err, ErrVersion) {
		t.Errorf("welcome of another version: %v", err)
	}
	bad := goodWelcome(ProtocolVersion)
	bad.Device.PageBytes = 1000
	if _, err := Dial(ctx, fakePeer(t, frameOf(t, TypeWelcome, 0, bad)), tok); !errors.Is(err, ErrBadAgent) {
		t.Errorf("page size not a power of two: %v", err)
	}
	if _, err := Dial(ctx, fakePeer(t, rawFrame("garbage")), tok); !errors.Is(err, ErrBadAgent) {
		t.Errorf("garbage welcome: %v", err)
	}
	if _, err := Dial(ctx, fakePeer(t, []byte{0xff, 0xff, 0xff, 0xff}), tok); !errors.Is(err, ErrBadAgent) {
		t.Errorf("oversize welcome: %v", err)
	}
	// An HTTP server answers the binary hello with a 400 in text; its first
	// four bytes read as a length of over a GiB.
	http := []byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
	if _, err := Dial(ctx, fakePeer(t, http), tok); !errors.Is(err, ErrNotAgent) || !strings.Contains(err.Error(), `"HTTP"`) {
		t.Errorf("an HTTP server's answer: %v, want %v naming the text", err, ErrNotAgent)
	}
	stallAboveTime := frameOf(t, TypeToken, 1, TokenSample{Pass: 0, Tokens: 1, TimeNS: 10, StallNS: 20})
	c, err := Dial(ctx, fakePeer(t, frameOf(t, TypeWelcome, 0, goodWelcome(ProtocolVersion)), stallAboveTime), tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Run(ctx, json.RawMessage(`{}`), nil); !errors.Is(err, ErrBadAgent) {
		t.Errorf("stall above time: %v", err)
	}
	if err := c.Ping(ctx); err == nil {
		t.Error("connection still usable after the agent broke the protocol")
	}
}
