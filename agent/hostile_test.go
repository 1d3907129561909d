package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
)

// TestSilentSocketsDoNotLockOut: 96 connections that send nothing, half a
// request's headers, or requests without the token, held open, do not keep
// a client with the token out (the framed protocol's 32 connection slots
// were all taken by 34 silent sockets).
func TestSilentSocketsDoNotLockOut(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), DefaultLimits()) // 10 s header timeout: the sockets outlive the test's run
	addr := strings.TrimPrefix(a.target, "tcp://")
	for i := range 96 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		switch i % 3 {
		case 1:
			io.WriteString(nc, "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n")
		case 2:
			io.WriteString(nc, "GET /v1/agent HTTP/1.1\r\nHost: x\r\n\r\n") // no token, and keeps the connection
		}
	}
	waitStats(t, a.srv, func(s Stats) bool { return s.Connections >= 96 })
	res, _, err := runRemote(context.Background(), a.target, a.token, json.RawMessage(`{"model": {"name": "qwen3-30b-a3b"}, "trace": {"synthetic": {"tokens": 2}}}`), nil)
	if err != nil || res.Tokens != 2 {
		t.Fatalf("a client with the token among 96 hostile sockets: %v", err)
	}
}

// TestHostileBodiesMemoryFlat: 48 requests announcing 8 MiB bodies and
// sending them, without the token, with a wrong one, or with the token
// (refused from the announced length), leave the agent's heap and the
// process's memory within a few MiB: no body is read before the token, nor
// above the limit after it (they would cost 384 MiB).
func TestHostileBodiesMemoryFlat(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	measure := func() runtime.MemStats {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m
	}
	before := measure()
	chunk := []byte(strings.Repeat("{", 64<<10))
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			nc, err := net.Dial("tcp", strings.TrimPrefix(a.target, "tcp://"))
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			auth := []string{"", "Authorization: Bearer " + strings.Repeat("0", 32) + "\r\n", "Authorization: Bearer " + a.token + "\r\n"}[i%3]
			fmt.Fprintf(nc, "POST /v1/run HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n", auth, 8<<20)
			for sent := 0; sent < 8<<20; sent += len(chunk) {
				if _, err := nc.Write(chunk); err != nil {
					break // the agent closed the connection: what it should do
				}
			}
			io.Copy(io.Discard, nc)
		})
	}
	wg.Wait()
	after := measure()
	heap, sys := int64(after.HeapInuse)-int64(before.HeapInuse), int64(after.Sys)-int64(before.Sys)
	t.Logf("heap in use %+d KiB, process memory from Go %+d KiB", heap>>10, sys>>10)
	if heap > 16<<20 || sys > 64<<20 {
		t.Errorf("48 hostile 8 MiB bodies grew the heap in use by %d MiB and Go's memory by %d MiB", heap>>20, sys>>20)
	}
	if st := a.srv.Stats(); st.Requests != 0 {
		t.Errorf("hostile bodies reached the engine: %+v", st)
	}
}

// TestLogQuotesClientInput: what a client sends (a path, a spec's strings, a
// model name) reaches the agent's log only quoted: no control character,
// no line of its own.
func TestLogQuotesClientInput(t *testing.T) {
	tok, ln := tokenAndListener(t)
	var log syncBuffer
	srv := &Server{Engine: newTestEngine(t, 0), Token: tok, Limits: fastLimits(), Log: &log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	a := &testAgent{srv: srv, target: "tcp://" + ln.Addr().String(), token: tok}
	const evil = "\x1b[2J\r\nFAKE lessim agent: hacked\x07"
	quotedEvil, _ := json.Marshal(evil)
	for _, auth := range []string{"", "Bearer " + tok} {
		ask(t, a, "GET", "/v1/%1B%5B2J%0D%0AFAKE%07", auth, "")
		ask(t, a, "POST", PathLoadModel, auth, `{"model": `+string(quotedEvil)+`}`)
		ask(t, a, "POST", PathRun, auth, `{"spec": {"model": {"name": `+string(quotedEvil)+`}, "policy": {"name": `+string(quotedEvil)+`}}}`)
	}
	raw := rawRequest(t, a, "GET /v1/agent HTTP/1.1\r\nHost: \x1b[2J\r\n\r\n", nil) // refused by net/http's parser
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, "invalid_spec") {
		t.Fatalf("the log does not show the hostile requests (quoted): %s (raw answer %q)", out, clip(raw, 80))
	}
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(l, "FAKE") || strings.IndexFunc(l, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			t.Errorf("log line %d carries a client's bytes unquoted: %q", i+1, l)
		}
	}
}

// TestCurl runs the curl commands of docs/agent-protocol.md against an
// agent: the info, and a simulation whose newline-delimited JSON answer is
// token lines then the result, equal to the Go client's.
func TestCurl(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("no /usr/bin/curl")
	}
	doc, err := os.ReadFile("../docs/agent-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, block := range strings.Split(string(doc), "\ncurl ")[1:] {
		cmd, _, _ := strings.Cut(block, "\n```")
		cmds = append(cmds, "curl "+cmd)
	}
	if len(cmds) != 2 {
		t.Fatalf("%d curl commands in docs/agent-protocol.md, want 2 (the info, a run)", len(cmds))
	}
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	run := func(cmd string) []byte {
		c := exec.Command("/bin/sh", "-c", strings.ReplaceAll(cmd, "127.0.0.1:7070", strings.TrimPrefix(a.target, "tcp://")))
		c.Env = append(os.Environ(), "TOKEN="+a.token)
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s: %v (%s)", cmd, err, out)
		}
		return out
	}
	var in Info
	if err := decodeStrict(run(cmds[0]), &in); err != nil || in.Validate() != nil {
		t.Fatalf("the info: %v %+v", err, in)
	}
	var tokens int
	var res json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(string(run(cmds[1]))))
	for sc.Scan() {
		var l Line
		if err := decodeStrict(sc.Bytes(), &l); err != nil || l.fields() != 1 || res != nil {
			t.Fatalf("line %q after %d tokens: %v", sc.Text(), tokens, err)
		}
		if l.Token != nil {
			tokens++
		}
		res = l.Result
	}
	spec, _, _ := strings.Cut(cmds[1][strings.Index(cmds[1], `{"spec": `)+9:], `}'`)
	want, _, err := runRemote(context.Background(), a.target, a.token, json.RawMessage(spec), nil)
	if err != nil {
		t.Fatalf("the same spec (%s) from the Go client: %v", spec, err)
	}
	wantJSON, _ := json.Marshal(want)
	if tokens == 0 || int64(tokens) != want.Passes || string(res) != string(wantJSON) {
		t.Errorf("curl: %d token lines and result %s; the Go client: %d passes, %s", tokens, res, want.Passes, wantJSON)
	}
}

// syncBuffer is a log safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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
