package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// FuzzReadFrame: any bytes give a message or an error, never a panic, and
// nothing longer than the limit is accepted (the length is checked before
// the body is allocated). A decoded message survives a write/read round trip.
func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{`{"type":"hello","id":0,"payload":{"protocol_version":1,"token":"x","client":"y"}}`,
		`{"type":"run","id":9,"payload":{"spec":{"trace":{"synthetic":{"tokens":4}}}}}`, `{"type":"record","id":3,"payload":{"tokens":8}}`,
		`{"type":"trace","id":3,"payload":{"parquet":"UEFSMQ=="}}`, `{"type":"ping","id":1}`, `[]`, ``, `{"type":"nope"}`,
		`{"type":"run","id":4,"payload":{"spec":{"trace":{"synthetic":{"tokens":4}}},"series":true}}`,
		`{"type":"token","id":4,"payload":{"pass":0,"tokens":1,"start_ns":0,"time_ns":90,"stall_ns":30,"compute_ns":60,"inflight_hits":0,"prefetch_loads":2,"major_faults":0,"stray_bytes":0}}`} {
		f.Add(rawFrame(s))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{'})
	f.Add([]byte{0, 0, 0, 3, '{', '}'})
	const limit = 1024
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := ReadFrame(bytes.NewReader(data), limit)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(64*len(data)+64<<10) {
			t.Fatalf("reading %d bytes allocated %d bytes", len(data), got)
		}
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(data) < 4 || int(uint32(data[0])<<24|uint32(data[1])<<16|uint32(data[2])<<8|uint32(data[3])) > limit {
			t.Fatalf("accepted a frame above the limit")
		}
		var buf bytes.Buffer
		if err := WriteFrame(&buf, m, limit+64); err != nil {
			t.Fatal(err)
		}
		m2, err := ReadFrame(&buf, limit+64)
		if err != nil || m2.Type != m.Type || m2.ID != m.ID {
			t.Fatalf("round trip: %v %+v %+v", err, m, m2)
		}
	})
}

// FuzzServeConn: a server connection fed arbitrary bytes (after an optional
// valid hello) neither panics nor hangs: it answers and closes, or waits for
// more input until the client closes.
func FuzzServeConn(f *testing.F) {
	f.Add(false, rawFrame(`{"type":"ping","id":1}`))
	f.Add(true, rawFrame(`{"type":"ping","id":1}`))
	f.Add(true, rawFrame(`{"type":"run","id":2,"payload":{"spec":{"model":{"name":"qwen3-30b-a3b"},"trace":{"synthetic":{"tokens":1}}}}}`))
	f.Add(true, rawFrame(`{"type":"load_model","id":2,"payload":{"model":"qwen3-30b-a3b"}}`))
	f.Add(true, rawFrame(`{"type":"calibrate","id":2,"payload":{}}`))
	f.Add(true, rawFrame(`{"type":"cancel","id":2}`))
	f.Add(true, rawFrame(`{"type":"record","id":2,"payload":{"tokens":2}}`))
	f.Add(true, rawFrame(`{"type":"record","id":2,"payload":{"tokens":0}}`))
	f.Add(true, rawFrame(`{"type":"record","id":2,"payload":{"tokens":"x","more":1}}`))
	f.Add(true, rawFrame(`{"type":"trace","id":2,"payload":{"parquet":"UEFSMQ=="}}`))
	f.Add(true, []byte{0, 0, 0, 1, '{'})
	f.Add(true, rawFrame(`{"type":"run","id":2,"payload":{"spec":{"model":{"name":"qwen3-30b-a3b"},"trace":{"synthetic":{"tokens":1}}},"series":true}}`))
	f.Add(true, rawFrame(`{"type":"run","id":2,"payload":{"spec":{},"series":"yes"}}`))
	f.Add(false, append(rawFrame(`{"type":"hello","id":0,"payload":{"protocol_version":3,"token":"00000000000000000000000000000000","client":"v3"}}`),
		rawFrame(`{"type":"run","id":2,"payload":{"spec":{},"series":true}}`)...))
	e := seriesSim{newTestEngine(f, 0)}
	tok, _ := NewToken()
	f.Fuzz(func(t *testing.T, handshake bool, data []byte) {
		lim := fastLimits()
		lim.HandshakeTimeout, lim.FrameTimeout = time.Second, time.Second
		srv := &Server{Engine: e, Token: tok, Limits: lim}
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() { defer close(done); srv.serveConn(context.Background(), server) }()
		go io.Copy(io.Discard, client) // the server's replies
		if handshake {
			b, _ := json.Marshal(Message{Type: TypeHello, Payload: json.RawMessage(`{"protocol_version":` + strconv.Itoa(ProtocolVersion) + `,"token":"` + tok + `","client":"fuzz"}`)})
			client.Write(rawFrame(string(b)))
		}
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(data)
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("connection handler still running 10 s after the client closed")
		}
	})
}

// FuzzTokenFrame: any token payload is refused or gives a sample whose
// every field is in range (what the client does with each token frame):
// counts and sizes non-negative, stall and compute within the pass's time.
func FuzzTokenFrame(f *testing.F) {
	f.Add(`{"pass":0,"tokens":1,"start_ns":0,"time_ns":90,"stall_ns":30}`)
	f.Add(`{"pass":3,"tokens":1,"start_ns":500,"time_ns":90,"stall_ns":30,"read_bytes":4096,"reads":1,"hits":3,"misses":1,"resident_bytes":65536,` +
		`"compute_ns":60,"inflight_hits":1,"prefetch_loads":2,"major_faults":0,"stray_bytes":0}`)
	f.Add(`{"pass":0,"tokens":1,"start_ns":0,"time_ns":90,"stall_ns":30,"compute_ns":91}`)
	f.Add(`{"pass":0,"tokens":1,"start_ns":0,"time_ns":90,"stall_ns":30,"major_faults":-1}`)
	f.Add(`{"pass":0,"tokens":1,"time_ns":90,"compute_ns":null,"extra":1}`)
	f.Fuzz(func(t *testing.T, payload string) {
		var s TokenSample
		if decodeStrict(json.RawMessage(payload), &s) != nil || s.Validate() != nil {
			return
		}
		if s.StallNS > s.TimeNS || s.ComputeNS != nil && (*s.ComputeNS < 0 || *s.ComputeNS > s.TimeNS) {
			t.Fatalf("accepted %s", payload)
		}
		for _, f := range append(s.seriesFields(), namedField{"read_bytes", s.ReadBytes}, namedField{"hits", s.Hits}) {
			if f.v != nil && *f.v < 0 {
				t.Fatalf("accepted %s: %s negative", payload, f.n)
			}
		}
		if s.HasSeries() != (s.WithoutSeries() != s) {
			t.Fatalf("HasSeries and WithoutSeries disagree on %s", payload)
		}
	})
}

// FuzzCheckTrace: any bytes as a record answer's trace give a checked trace
// or an error, never a panic. Seeds: a real recorded trace (the simulator
// engine's) and damaged copies of it.
func FuzzCheckTrace(f *testing.F) {
	e := newTestEngine(f, 0)
	if _, err := e.LoadModel(context.Background(), "qwen3-30b-a3b"); err != nil {
		f.Fatal(err)
	}
	good, err := e.Record(context.Background(), 2)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, 2)
	f.Add(good[:len(good)/2], 2)
	f.Add(append([]byte("PAR1"), good[len(good)/2:]...), 2)
	f.Add([]byte("PAR1PAR1"), 1)
	f.Fuzz(func(t *testing.T, b []byte, tokens int) {
		tr, err := CheckTrace(b, tokens)
		if err == nil && (tr.DecodeTokens != tokens || len(tr.Meta.Model.Layers) == 0) {
			t.Fatalf("accepted a trace of %d decode tokens (asked %d), model %+v", tr.DecodeTokens, tokens, tr.Meta.Model.Name)
		}
	})
}
