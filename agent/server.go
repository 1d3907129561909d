package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// DefaultMaxConns bounds the connections an agent holds at once unless
// Server.MaxConns says otherwise; more get a busy frame and are closed.
// One request runs at a time, so a handful of clients is all an agent
// serves; 32 leaves room for the conformance check's probes while keeping
// one client from exhausting the process's file descriptors.
const DefaultMaxConns = 32

// Accept retries: a temporary Accept error (out of file descriptors, a
// timeout) waits acceptDelayMin, doubling up to acceptDelayMax, as
// net/http's Server.Serve does, instead of ending Serve.
const (
	acceptDelayMin = 5 * time.Millisecond
	acceptDelayMax = time.Second
)

// Server is an agent: it serves one Engine over the protocol to clients
// holding its token, one request at a time.
type Server struct {
	// Engine is what the agent runs; nothing else is reachable over the wire.
	Engine Engine
	// Token is the secret every connection's hello must carry (NewToken).
	Token string
	// Limits bound each connection; the zero value means DefaultLimits.
	Limits Limits
	// Agent names the implementation in the welcome, e.g. "lessim 0.1.0".
	Agent string
	// Log, when set, gets one line per connection event.
	Log io.Writer
	// MaxConns bounds the connections held at once (0 = DefaultMaxConns);
	// one more is answered with a busy frame and closed.
	MaxConns int

	// maxVersion, when set, is the newest protocol version served (tests
	// play an older agent with it); 0 is ProtocolVersion.
	maxVersion int

	mu      sync.Mutex
	running string // what holds the engine, "" when free
	stats   Stats
	conns   sync.WaitGroup
	logMu   sync.Mutex
}

// Stats count what a server has done; Active and Running say what it is
// doing now.
type Stats struct {
	Connections int64 // accepted
	Active      int   // open now
	Requests    int64 // load_model, calibrate and run requests started
	Completed   int64
	Cancelled   int64 // by cancel, disconnect or shutdown
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

func (s *Server) limits() Limits {
	if s.Limits == (Limits{}) {
		return DefaultLimits()
	}
	return s.Limits
}

func (s *Server) check() error {
	if s.Engine == nil {
		return errors.New("agent: no engine")
	}
	if !ValidToken(s.Token) {
		return errors.New("agent: the token must be 32 hex characters (NewToken)")
	}
	if s.MaxConns < 0 {
		return fmt.Errorf("agent: max connections %d: want >= 1 (0 = %d)", s.MaxConns, DefaultMaxConns)
	}
	return s.limits().Validate()
}

func (s *Server) maxConns() int {
	if s.MaxConns == 0 {
		return DefaultMaxConns
	}
	return s.MaxConns
}

// Serve accepts connections on ln until ctx is done, then closes ln, cancels
// every running request, closes every connection and returns once all of
// them are gone.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.check(); err != nil {
		ln.Close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer s.conns.Wait()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !temporaryAccept(err) {
				ln.Close()
				return err
			}
			delay = min(max(2*delay, acceptDelayMin), acceptDelayMax)
			s.logf("accept: %v; retrying in %v", err, delay)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		delay = 0
		if !s.admit(nc) {
			continue
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			s.serveConn(ctx, nc)
			s.mu.Lock()
			s.stats.Active--
			s.mu.Unlock()
		}()
	}
}

// temporaryAccept reports whether an Accept error passes: the process or
// the system is out of file descriptors or buffers (EMFILE, ENFILE,
// ENOBUFS, ENOMEM), a connection was aborted before it was accepted, or a
// timeout.
func temporaryAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// admit counts a new connection and keeps it, or, when the server holds
// MaxConns already, answers it busy, closes it and logs why.
func (s *Server) admit(nc net.Conn) bool {
	most := s.maxConns()
	s.mu.Lock()
	s.stats.Connections++
	full := s.stats.Active >= most
	if !full {
		s.stats.Active++
	}
	s.mu.Unlock()
	if full {
		msg := fmt.Sprintf("the agent holds %d connections already", most)
		s.logf("%s: refused: %s", nc.RemoteAddr(), msg)
		nc.SetWriteDeadline(time.Now().Add(s.limits().FrameTimeout))
		WriteFrame(nc, errorMessage(0, CodeBusy, msg), 0)
		nc.Close()
	}
	return !full
}

// acquire takes the engine for one request, or says who holds it.
func (s *Server) acquire(what string) (holder string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != "" {
		return s.running, false
	}
	s.running = what
	s.stats.Requests++
	return "", true
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
	if s.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.Log, format+"\n", a...)
}

func errorMessage(id uint64, code, msg string) *Message {
	b, _ := json.Marshal(ErrorPayload{Code: code, Message: msg})
	return &Message{Type: TypeError, ID: id, Payload: b}
}

// isTimeout reports a deadline error from a net.Conn.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
