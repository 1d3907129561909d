package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Limits bound what one request may cost the agent, announced in its Info
// (durations as integer nanoseconds).
type Limits struct {
	MaxBodyBytes  int64         `json:"max_body_bytes"`    // the largest request body read, after the token
	HeaderTimeout time.Duration `json:"header_timeout_ns"` // for a request's headers; then the connection is closed unanswered
	ReadTimeout   time.Duration `json:"read_timeout_ns"`   // for a whole request, headers and body; then timeout
	WriteTimeout  time.Duration `json:"write_timeout_ns"`  // for each line of an answer; then the request is cancelled
	IdleTimeout   time.Duration `json:"idle_timeout_ns"`   // closes a kept-alive connection without a request
	Heartbeat     time.Duration `json:"heartbeat_ns"`      // interval of heartbeat lines while a request runs
}

// DefaultLimits are the agent's defaults.
func DefaultLimits() Limits {
	return Limits{MaxBodyBytes: 1 << 20, HeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, Heartbeat: 2 * time.Second}
}

// Validate reports a limit that is out of range.
func (l Limits) Validate() error {
	if l.MaxBodyBytes < 1024 || l.MaxBodyBytes > 64<<20 || min(l.HeaderTimeout, l.ReadTimeout, l.WriteTimeout, l.IdleTimeout, l.Heartbeat) <= 0 {
		return fmt.Errorf("limits %+v: want 1 KiB to 64 MiB bodies and positive timeouts", l)
	}
	return nil
}

// maxHeaderBytes bounds a request's headers (net/http answers more with 431).
const maxHeaderBytes = 16 << 10

// Server is an agent: it serves one Engine over HTTP (net/http's server,
// with Limits as its timeouts) to clients holding its token, one engine
// request at a time.
type Server struct {
	Engine Engine // what the agent runs; nothing else is reachable over the wire
	Token  string // the secret every request must carry (NewToken)
	Limits Limits // the zero value means DefaultLimits
	Agent  string // the implementation in the Info, e.g. "lessim 0.1.0"
	// Log, when set, gets one line per request event, from any goroutine;
	// what a client sent appears in it only quoted (%q).
	Log io.Writer

	mu      sync.Mutex
	running string // what holds the engine, "" when free
	stats   Stats
}

// Stats count what a server has done and is doing.
type Stats struct {
	Connections int64 // accepted
	Active      int   // open now
	Requests    int64 // engine requests started
	Completed   int64
	Cancelled   int64 // by the client closing its request, or Serve's end
	Failed      int64
	Running     bool // a request holds the engine
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Running = s.running != ""
	return st
}

func (s *Server) limits() Limits { return cmp.Or(s.Limits, DefaultLimits()) }

// Serve serves HTTP on ln until ctx is done, then closes ln, cancels every
// running request and returns once all of them have returned.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	lim := s.limits()
	err := lim.Validate()
	switch {
	case s.Engine == nil:
		err = errors.New("agent: no engine")
	case !ValidToken(s.Token):
		err = errors.New("agent: the token must be 32 hex characters (NewToken)")
	}
	if err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: lim.HeaderTimeout, ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout,
		IdleTimeout: lim.IdleTimeout, MaxHeaderBytes: maxHeaderBytes, ConnState: s.connState,
		BaseContext: func(net.Listener) context.Context { return ctx }, ErrorLog: log.New(quoted{s}, "", 0)}
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if hs.Shutdown(wait) != nil {
			hs.Close()
		}
	})
	if err := hs.Serve(ln); stop() {
		return err // Serve failed on its own (a permanent Accept error)
	}
	<-done
	return nil
}

func (s *Server) connState(_ net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.stats.Connections++
		s.stats.Active++
	case http.StateClosed, http.StateHijacked:
		s.stats.Active--
	}
}

// work is a checked engine request: it returns the final line.
type work func(ctx context.Context, send func(Line) error) (Line, error)

// refusal is a request answered with an error before the engine runs.
type refusal struct {
	code   string
	status int // 0: the code's
	msg    string
}

// ServeHTTP answers one request: the token first (before any of the body
// is read), then the path, the body within its limit, and the engine.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	run, rf := s.admit(w, r)
	switch {
	case rf != nil:
		s.logf("%s %q %q: refused: %s", r.RemoteAddr, r.Method, r.URL.Path, rf.code)
		if rf.code == CodeAuth {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lessim agent"`)
		}
		if rf.code != CodeBusy {
			w.Header().Set("Connection", "close") // the body of a refused request is not read
		}
		writeError(w, cmp.Or(rf.status, statusOf[rf.code]), rf.code, rf.msg)
	case run != nil:
		s.stream(w, r, run)
	}
}

// admit checks a request and takes the engine for its work; it answers
// the info itself.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (work, *refusal) {
	lim := s.limits()
	if !authorized(r, s.Token) {
		return nil, &refusal{CodeAuth, 0, "wrong token or none (send Authorization: Bearer TOKEN; the agent prints its token when it starts)"}
	}
	kind, known := map[string]string{PathAgent: "info", PathLoadModel: "load_model", PathCalibrate: "calibrate", PathRecord: "record", PathRun: "run"}[r.URL.Path]
	method := map[bool]string{true: http.MethodGet, false: http.MethodPost}[kind == "info"]
	switch {
	case !known:
		return nil, &refusal{CodeNotFound, 0, fmt.Sprintf("no path %q (see docs/agent-protocol.md)", clip(r.URL.Path, 200))}
	case r.Method != method:
		w.Header().Set("Allow", method)
		return nil, &refusal{CodeBadRequest, http.StatusMethodNotAllowed, r.URL.Path + " takes " + method}
	case kind == "info":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Info{Agent: s.Agent, Capabilities: capabilities(s.Engine), Device: s.Engine.Facts(), Limits: lim})
		return nil, nil
	case r.ContentLength > lim.MaxBodyBytes:
		return nil, &refusal{CodeTooLarge, 0, fmt.Sprintf("a body of %d bytes; the limit is %d", r.ContentLength, lim.MaxBodyBytes)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, lim.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &refusal{CodeTooLarge, 0, fmt.Sprintf("a body above the limit of %d bytes", lim.MaxBodyBytes)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &refusal{CodeTimeout, 0, fmt.Sprintf("the request did not arrive within %v", lim.ReadTimeout)}
	case err != nil:
		return nil, &refusal{CodeBadRequest, 0, "reading the body: " + err.Error()}
	}
	run, err := s.parse(kind, body)
	if err != nil {
		return nil, &refusal{CodeBadRequest, 0, kind + ": " + err.Error()}
	}
	what := kind + " from " + r.RemoteAddr
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != "" {
		return nil, &refusal{CodeBusy, 0, "the engine is busy with " + s.running + "; one request at a time"}
	}
	s.running = what
	s.stats.Requests++
	s.logf("%s started", what)
	return run, nil
}

// parse checks an engine request's body and returns its work.
func (s *Server) parse(kind string, body []byte) (work, error) {
	switch kind {
	case "load_model":
		var p LoadModel
		if err := decodeStrict(body, &p); err != nil || p.Model == "" || len(p.Model) > maxTextBytes {
			return nil, cmp.Or(err, fmt.Errorf("model must be a name of 1 to %d bytes", maxTextBytes))
		}
		return func(ctx context.Context, _ func(Line) error) (Line, error) {
			info, err := s.Engine.LoadModel(ctx, p.Model)
			return Line{Model: &info}, err
		}, nil
	case "calibrate":
		var p Calibrate
		return func(ctx context.Context, _ func(Line) error) (Line, error) {
			y, err := s.Engine.Calibrate(ctx, p.Options)
			return Line{Calibration: &Calibration{ProfileYAML: string(y)}}, err
		}, decodeStrict(body, &p)
	case "record":
		var p Record
		if err := decodeStrict(body, &p); err != nil || p.Validate() != nil {
			return nil, cmp.Or(err, p.Validate())
		}
		return func(ctx context.Context, _ func(Line) error) (Line, error) {
			r, ok := s.Engine.(Recorder)
			if !ok {
				return Line{}, errNoRecord
			}
			b, err := r.Record(ctx, p.Tokens) // the client reads it back (CheckTrace)
			return Line{Trace: &TracePayload{Parquet: b}}, err
		}, nil
	}
	var p Run
	if err := decodeStrict(body, &p); err != nil || len(p.Spec) == 0 || p.Spec[0] != '{' {
		return nil, cmp.Or(err, errors.New(`a run carries {"spec": {...}}, an experiment spec (docs/experiment-spec.md) as a JSON object`))
	}
	return func(ctx context.Context, send func(Line) error) (Line, error) {
		if err := Supports(s.Engine, CapSeries); p.Series && err != nil {
			return Line{}, err
		}
		var pass int64
		res, err := s.Engine.Run(ctx, p.Spec, func(ts TokenSample) error {
			if ts.Pass != pass {
				return fmt.Errorf("engine emitted pass %d, expected %d", ts.Pass, pass)
			}
			if pass++; !p.Series {
				ts = ts.WithoutSeries()
			}
			return send(Line{Token: &ts})
		})
		if err != nil || res == nil {
			return Line{}, cmp.Or(err, errors.New("engine returned no result"))
		}
		b, err := json.Marshal(res)
		return Line{Result: b}, err
	}, nil
}

// stream runs an engine request and writes its lines: heartbeats (and
// tokens), then the final line, after the engine is released so that a
// client may start the next request at once. An error before any line
// gets its code's status.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run work) {
	lim := s.limits()
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{}) // the body is in; the request may run for long
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var mu sync.Mutex
	started := false
	send := func(l Line) error {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			started = true
		}
		rc.SetWriteDeadline(time.Now().Add(lim.WriteTimeout))
		b, _ := json.Marshal(l)
		_, err := w.Write(append(b, '\n'))
		if err = cmp.Or(err, rc.Flush()); err != nil {
			cancel() // the client is gone or stopped reading: stop the engine
		}
		return err
	}
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		t0, t := time.Now(), time.NewTicker(lim.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				send(Line{Heartbeat: &Heartbeat{ElapsedNS: int64(time.Since(t0))}})
			}
		}
	}()
	final, err := guard(ctx, run, send)
	err = cmp.Or(err, ctx.Err()) // cancelled as it finished: the client asked not to get it
	cancel()
	<-beat
	s.release(err)
	if err == nil {
		s.logf("%s %q done", r.RemoteAddr, r.URL.Path)
		send(final)
		return
	}
	code := errorCode(err)
	s.logf("%s %q ended: %s: %q", r.RemoteAddr, r.URL.Path, code, err.Error())
	if started { // the engine and the heartbeat are done: nothing else sends
		send(Line{Error: &ErrorBody{Code: code, Message: clip(err.Error(), maxTextBytes)}})
	} else {
		writeError(w, statusOf[code], code, clip(err.Error(), maxTextBytes))
	}
}

// guard runs work, turning an engine panic into an error.
func guard(ctx context.Context, run work, send func(Line) error) (l Line, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("engine panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return run(ctx, send)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(Line{Error: &ErrorBody{Code: code, Message: msg}})
}

// release frees the engine and counts how the request ended.
func (s *Server) release(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = ""
	switch {
	case err == nil:
		s.stats.Completed++
	case errorCode(err) == CodeCancelled:
		s.stats.Cancelled++
	default:
		s.stats.Failed++
	}
}

func (s *Server) logf(format string, a ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", a...)
	}
}

// quoted is net/http's error log: each of its lines quoted, since some
// carry what a client sent.
type quoted struct{ s *Server }

func (q quoted) Write(p []byte) (int, error) {
	q.s.logf("http: %q", p)
	return len(p), nil
}

// TokenBytes is the size of an agent token's random part: 128 bits.
const TokenBytes = 16

// NewToken returns a fresh agent token: 128 bits from crypto/rand as 32
// lowercase hex characters.
func NewToken() (string, error) {
	var b [TokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("agent token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidToken reports whether t has a token's form (32 hex characters).
func ValidToken(t string) bool {
	_, err := hex.DecodeString(t)
	return len(t) == 2*TokenBytes && err == nil
}

// authorized reports whether r carries "Authorization: Bearer TOKEN" with
// token, compared in constant time (for equal lengths; a token's length is
// public).
func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// Listen opens the agent's TCP listener on addr (HOST:PORT). Unless
// allowRemote is set, HOST must be a loopback address (or a name resolving
// only to loopback addresses): an agent runs the engine for whoever holds
// the token, so it is not exposed to a network by accident.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %v (want HOST:PORT, e.g. 127.0.0.1:7070)", addr, err)
	}
	if err := requireLoopback(host); err != nil && !allowRemote {
		return nil, fmt.Errorf("listen address %q: %v; pass --allow-remote to listen on a network", addr, err)
	}
	return net.Listen("tcp", addr)
}

func requireLoopback(host string) error {
	if host == "" {
		return fmt.Errorf("an empty host listens on every interface")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host) // an address is itself
	for _, ip := range ips {
		if !ip.IsLoopback() {
			if net.ParseIP(host) != nil {
				return fmt.Errorf("%s is not a loopback address", host)
			}
			return fmt.Errorf("%s resolves to %s, not a loopback address", host, ip)
		}
	}
	return err
}
