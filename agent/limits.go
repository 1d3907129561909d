package agent

import (
	"fmt"
	"time"
)

// Limits bound what one connection may cost the agent.
type Limits struct {
	// MaxFrameBytes is the largest frame body accepted or sent (at most
	// MaxFrameBytes).
	MaxFrameBytes int
	// HandshakeTimeout is how long a new connection has to send its hello.
	HandshakeTimeout time.Duration
	// FrameTimeout bounds reading one frame's body once its header arrived,
	// and writing one frame.
	FrameTimeout time.Duration
	// IdleTimeout closes a connection that sends nothing while no request of
	// its own is running.
	IdleTimeout time.Duration
	// Heartbeat is the interval of heartbeat frames while a request runs, so
	// a client can tell a long step from a dead agent.
	Heartbeat time.Duration
}

// DefaultLimits are the agent's defaults: 16 MiB frames, 10 s handshake,
// 10 s per frame, 5 min idle, a heartbeat every 2 s.
func DefaultLimits() Limits {
	return Limits{
		MaxFrameBytes:    MaxFrameBytes,
		HandshakeTimeout: 10 * time.Second,
		FrameTimeout:     10 * time.Second,
		IdleTimeout:      5 * time.Minute,
		Heartbeat:        2 * time.Second,
	}
}

// Validate reports a limit that is out of range.
func (l Limits) Validate() error {
	if l.MaxFrameBytes < 1024 || l.MaxFrameBytes > MaxFrameBytes {
		return fmt.Errorf("max frame bytes %d: want 1 KiB to %d", l.MaxFrameBytes, MaxFrameBytes)
	}
	if l.HandshakeTimeout <= 0 || l.FrameTimeout <= 0 || l.IdleTimeout <= 0 || l.Heartbeat <= 0 {
		return fmt.Errorf("timeouts must be positive (%+v)", l)
	}
	return nil
}

func (l Limits) wire() WireLimits {
	return WireLimits{
		MaxFrameBytes: l.MaxFrameBytes, HandshakeTimeoutNS: int64(l.HandshakeTimeout),
		FrameTimeoutNS: int64(l.FrameTimeout), IdleTimeoutNS: int64(l.IdleTimeout), HeartbeatNS: int64(l.Heartbeat),
	}
}
