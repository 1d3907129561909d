package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"
)

// wire is a raw connection for probes that break the rules.
type wire struct {
	nc    net.Conn
	limit int
	wait  time.Duration
}

// greeted is a raw connection that has said hello with the token (closed on
// error; the caller closes it otherwise).
func (k *checker) greeted(ctx context.Context) (*wire, error) {
	w, err := k.raw(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.hello(k.token); err != nil {
		w.nc.Close()
		return nil, err
	}
	return w, nil
}

// raw dials the target with the client's timeouts and limits, without a handshake.
func (k *checker) raw(ctx context.Context) (*wire, error) {
	t, err := ParseTarget(k.target)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, k.o.Client.DialTimeout)
	defer cancel()
	nc, err := t.dial(dctx, k.o.Client.Usbmux)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return &wire{nc: nc, limit: k.o.Client.MaxFrameBytes, wait: k.o.Client.Silence}, nil
}

func (w *wire) sendRaw(b []byte) error {
	w.nc.SetWriteDeadline(time.Now().Add(w.wait))
	_, err := w.nc.Write(b)
	return err
}

func (w *wire) send(typ string, id uint64, payload any) error {
	var raw json.RawMessage
	if payload != nil {
		b, _ := json.Marshal(payload)
		raw = b
	}
	w.nc.SetWriteDeadline(time.Now().Add(w.wait))
	return WriteFrame(w.nc, &Message{Type: typ, ID: id, Payload: raw}, w.limit)
}

// next reads the next frame that is not a heartbeat.
func (w *wire) next() (*Message, error) {
	for {
		w.nc.SetReadDeadline(time.Now().Add(w.wait))
		m, err := ReadFrame(w.nc, w.limit)
		if err != nil {
			return nil, readErr(err)
		}
		if m.Type != TypeHeartbeat {
			return m, nil
		}
	}
}

func (w *wire) hello(token string) error {
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: ProtocolVersion, Token: token, Client: "lessim agent check"}); err != nil {
		return err
	}
	m, err := w.next()
	if err != nil {
		return err
	}
	if m.Type != TypeWelcome {
		return fmt.Errorf("hello answered with %s", m.Type)
	}
	return nil
}

// expectError reads frames until the one for id: it must be an error with
// code. Token frames of a running request are skipped.
func (w *wire) expectError(id uint64, code string) error {
	for {
		m, err := w.next()
		if err != nil {
			return fmt.Errorf("waiting for error %s: %w", code, err)
		}
		if m.ID != id {
			continue
		}
		if m.Type == TypeToken {
			continue
		}
		if m.Type != TypeError {
			return fmt.Errorf("expected error %s, got %s", code, m.Type)
		}
		var p ErrorPayload
		if err := json.Unmarshal(m.Payload, &p); err != nil || p.Code != code {
			return fmt.Errorf("expected error %s, got %s", code, m.Payload)
		}
		return nil
	}
}

// expectClosed waits for the agent to close the connection.
func (w *wire) expectClosed() error {
	w.nc.SetReadDeadline(time.Now().Add(w.wait))
	_, err := io.Copy(io.Discard, w.nc)
	if isTimeout(err) {
		return fmt.Errorf("the agent kept the connection open after a fatal error")
	}
	return nil
}

// fatal expects an error frame with code for id, then the connection's end.
func (w *wire) fatal(id uint64, code string) (string, error) {
	if err := w.expectError(id, code); err != nil {
		return "", err
	}
	if err := w.expectClosed(); err != nil {
		return "", err
	}
	return "error " + code + ", connection closed", nil
}
