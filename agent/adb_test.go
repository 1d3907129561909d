package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/adb"
	"github.com/lessim/lessim/adb/adbtest"
)

// TestADBTarget: adb://SERIAL:PORT through a stand-in adb server (which
// lists one phone and relays its port 7070 to a real agent over TCP) passes
// every conformance check and gives the same result as tcp:// to that
// agent: the Android path end to end, but for the cable and adbd.
func TestADBTarget(t *testing.T) {
	lim := fastLimits()
	lim.HeaderTimeout = 300 * time.Millisecond
	a := startAgent(t, newTestEngine(t, 10), lim)
	const serial = "R5CT10ABCDE"
	s, err := adbtest.Start(adbtest.Device{Serial: serial, Model: "SM_S918B", Ports: map[uint16]string{7070: strings.TrimPrefix(a.target, "tcp://")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Setenv("ANDROID_ADB_SERVER_ADDRESS", "127.0.0.1")
	t.Setenv("ANDROID_ADB_SERVER_PORT", strconv.Itoa(s.Port()))
	target := "adb://" + serial + ":7070"

	res := Check(context.Background(), target, a.token, CheckOptions{Model: "qwen3-30b-a3b", CancelWithin: 10 * time.Second}, nil)
	if len(res) < 12 {
		t.Errorf("%d checks ran", len(res))
	}
	for _, r := range res {
		if r.Outcome != CheckPass {
			t.Errorf("check %q over adb: %s: %s", r.Name, r.Outcome, r.Detail)
		}
	}
	if s.Count("tcp") < len(res) {
		t.Errorf("%d device streams for %d checks: the checks did not go through adb", s.Count("tcp"), len(res))
	}

	run := func(target string) string {
		r, _, err := runRemote(context.Background(), target, a.token, json.RawMessage(testSpec), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		return string(b)
	}
	if adbRes, tcpRes := run(target), run(a.target); adbRes != tcpRes {
		t.Errorf("adb result differs from tcp:\n%s\n%s", adbRes, tcpRes)
	}

	// The client keeps adb's errors (package adb's tests check them).
	var f *adb.Failure
	if _, err := Dial(context.Background(), "adb://0123456789ABCDEF:7070", a.token); !errors.Is(err, ErrUnreachable) || !errors.As(err, &f) || f.Request != "host:transport:0123456789ABCDEF" {
		t.Errorf("unknown serial: %v", err)
	}
	if _, err := Dial(context.Background(), "adb://"+serial+":7071", a.token); !errors.Is(err, ErrUnreachable) || !errors.As(err, &f) || f.Request != "tcp:7071" {
		t.Errorf("closed device port: %v", err)
	}
	t.Setenv("ANDROID_ADB_SERVER_PORT", "1")
	if _, err := Dial(context.Background(), target, a.token); !errors.Is(err, ErrUnreachable) || !errors.Is(err, adb.ErrNoServer) {
		t.Errorf("no adb server: %v", err)
	}
}

// TestParseADBTarget pins the adb:// forms: the port defaults to 7070, and
// a serial with a colon (a device on the network) needs the port.
func TestParseADBTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"adb://R5CT10ABCDE":               {Scheme: "adb", Serial: "R5CT10ABCDE", Port: 7070},
		"adb://emulator-5554:8080":        {Scheme: "adb", Serial: "emulator-5554", Port: 8080},
		"adb://192.168.1.5:5555:7070":     {Scheme: "adb", Serial: "192.168.1.5:5555", Port: 7070},
		"adb://adb-R5CT10-x._adb._tcp.:9": {Scheme: "adb", Serial: "adb-R5CT10-x._adb._tcp.", Port: 9},
	} {
		tg, err := ParseTarget(in)
		if err != nil || tg != want {
			t.Errorf("%s: %+v %v", in, tg, err)
		}
		if back, err := ParseTarget(tg.String()); err != nil || back != tg {
			t.Errorf("%s: %s reads back as %+v %v", in, tg, back, err)
		}
	}
	for _, in := range []string{"adb://", "adb://:7070", "adb://x:0", "adb://x:70000", "adb://x:", "adb://a b:1", "adb://a/b:1", "adb://ä:1"} {
		if _, err := ParseTarget(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
