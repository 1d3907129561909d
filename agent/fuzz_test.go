package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzLine: any line a client reads is refused or has exactly one field,
// and a token line's sample is refused or valid; a decoded line survives a
// write/read round trip.
func FuzzLine(f *testing.F) {
	for _, s := range []string{`{"heartbeat":{"elapsed_ns":5}}`, `{"result":{"passes":1}}`, `{"trace":{"parquet":"UEFSMQ=="}}`,
		`{"error":{"code":"busy","message":"x"}}`, `{"token":{"pass":0,"tokens":1,"start_ns":0,"time_ns":90,"stall_ns":30}}`,
		`{"token":null,"model":{"name":"m"}}`, `{}`, `[]`, `{"calibration":{"profile_yaml":"name: x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Line
		if decodeStrict(data, &l) != nil || l.fields() != 1 {
			return
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var l2 Line
		if err := decodeStrict(b, &l2); err != nil || l2.fields() != 1 {
			t.Fatalf("round trip of %q: %s: %v", data, b, err)
		}
	})
}

// FuzzServeHTTP: any request the HTTP parser accepts, with or without the
// token, gets a status and JSON lines, never a panic or a hang.
func FuzzServeHTTP(f *testing.F) {
	tok, _ := NewToken()
	for _, s := range []string{
		"GET /v1/agent HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: 70\r\n\r\n" + `{"spec":{"model":{"name":"qwen3-30b-a3b"},"trace":{"synthetic":{"tokens":1}}}}`,
		"POST /v1/load_model HTTP/1.1\r\nHost: x\r\nContent-Length: 27\r\n\r\n" + `{"model":"qwen3-30b-a3b"}`,
		"POST /v1/calibrate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/record HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n" + `{"tokens":2}`,
		"POST /v1/run HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"sp\"\r\n0\r\n\r\n",
		"POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n" + `{"spec":{},"series":true}`,
	} {
		f.Add(true, s)
		f.Add(false, s)
	}
	e := seriesSim{newTestEngine(f, 0)}
	srv := &Server{Engine: e, Token: tok, Limits: fastLimits()}
	f.Fuzz(func(t *testing.T, auth bool, raw string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		req = req.WithContext(context.Background())
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code < 200 || w.Code > 599 {
			t.Fatalf("status %d", w.Code)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(w.Body.Bytes()), []byte("\n")) {
			if !json.Valid(line) {
				t.Fatalf("%q answered with %q", raw, w.Body.Bytes())
			}
		}
	})
}

// FuzzTokenLine: any token sample is refused or gives a sample whose every
// field is in range (what the client does with each token line): counts
// and sizes non-negative, stall and compute within the pass's time.
func FuzzTokenLine(f *testing.F) {
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
		if s.HasSeries() != (s.ComputeNS != nil || s.InflightHits != nil || s.PrefetchLoads != nil || s.MajorFaults != nil || s.StrayBytes != nil) {
			t.Fatalf("HasSeries wrong on %s", payload)
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
