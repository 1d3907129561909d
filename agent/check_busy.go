package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// startRun starts the check's run on a raw connection and waits for its
// first token.
func (k *checker) startRun(ctx context.Context, id uint64) (*wire, error) {
	var w *wire
	err := k.whenFree(func() error {
		var err error
		w, err = k.tryRun(ctx, id)
		return err
	})
	return w, err
}

// whenFree calls f until it is not refused as busy (a previous check's
// cancelled request may still be stopping), for at most the silence limit.
func (k *checker) whenFree(f func() error) error {
	deadline := time.Now().Add(k.o.Client.Silence)
	for {
		err := f()
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tryRun starts the check's run on a new raw connection.
func (k *checker) tryRun(ctx context.Context, id uint64) (*wire, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.send(TypeRun, id, Run{Spec: k.o.Spec}); err != nil {
		w.nc.Close()
		return nil, err
	}
	m, err := w.next()
	if err != nil {
		w.nc.Close()
		return nil, err
	}
	if m.Type == TypeBusy && m.ID == id {
		w.nc.Close()
		return nil, &RemoteError{Code: CodeBusy, Message: string(m.Payload)}
	}
	if m.Type != TypeToken || m.ID != id {
		w.nc.Close()
		return nil, fmt.Errorf("expected the run's first token, got %s %s", m.Type, clip(string(m.Payload), 200))
	}
	return w, nil
}

// probeAttempts is how often the busy and cancel probes start a run before
// they give up on a run that ends before the probe: on a loaded host the
// probe may lose the race with a short run's end, and one more run decides.
const probeAttempts = 3

// errRaced marks a probe attempt that cannot decide: the run ended before
// the probe reached the agent.
var errRaced = errors.New("the run ended before the probe")

// busyOther: a second connection's run while a run holds the engine is
// answered busy. The probe connection says hello before the run starts, so
// only its run request races the run's end. A probe run accepted is a fault
// only if the first run provably went on after it was accepted (see
// overlapped); otherwise the attempt is repeated.
func (k *checker) busyOther(ctx context.Context) (string, error) {
	for range probeAttempts {
		d, err := k.busyOtherOnce(ctx)
		if !errors.Is(err, errRaced) {
			return d, err
		}
	}
	return "", skipError(fmt.Sprintf("the first run ended before the second connection's run reached the agent, %d times: give --spec a longer run", probeAttempts))
}

func (k *checker) busyOtherOnce(ctx context.Context) (string, error) {
	b, err := k.greeted(ctx)
	if err != nil {
		return "", err
	}
	defer b.nc.Close()
	var a *wire
	err = k.whenFree(func() error {
		var err error
		a, err = k.runPinged(ctx)
		return err
	})
	if err != nil {
		return "", err
	}
	defer a.nc.Close()
	if err := b.send(TypeRun, 1, Run{Spec: k.o.Spec}); err != nil {
		return "", err
	}
	m, err := b.next()
	if err != nil {
		return "", fmt.Errorf("a second connection's run during a run: %w", err)
	}
	switch {
	case m.ID == 1 && m.Type == TypeBusy:
		var p BusyPayload
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			return "", fmt.Errorf("busy payload %s: %v", clip(string(m.Payload), 200), err)
		}
		if err := b.send(TypePing, 2, nil); err != nil {
			return "", err
		}
		if m, err := b.next(); err != nil || m.Type != TypePong || m.ID != 2 {
			return "", fmt.Errorf("connection unusable after busy: %v", frameOrErr(m, err))
		}
		return "busy: " + p.Message, nil
	case m.ID == 1 && m.Type == TypeToken:
		n, err := a.overlapped(1)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", errRaced
		}
		return "", fmt.Errorf("a second connection's run was accepted and streamed while the first run went on (%d more passes of the first run after it): want busy", n)
	}
	return "", fmt.Errorf("a second connection's run during a run: got %s %s, want busy", m.Type, clip(string(m.Payload), 200))
}

// runPinged starts the check's run (id 1) on a new connection with a ping
// in the same write, and returns once the pong came: the agent has read the
// run (and holds the engine for it) but the run has not had time to end, as
// it would have by its first token (a simulation or a model's prefill
// first). A busy answer to the run is ErrBusy.
func (k *checker) runPinged(ctx context.Context) (*wire, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return nil, err
	}
	const pingID = 1 << 32
	b, err := frames(w.limit, k.runFrame(1), &Message{Type: TypePing, ID: pingID})
	if err == nil {
		err = w.sendRaw(b)
	}
	for err == nil {
		var m *Message
		if m, err = w.next(); err != nil {
			break
		}
		switch {
		case m.ID == pingID && m.Type == TypePong:
			return w, nil
		case m.ID == 1 && m.Type == TypeBusy:
			err = &RemoteError{Code: CodeBusy, Message: string(m.Payload)}
		case m.ID == 1 && m.Type != TypeToken:
			err = fmt.Errorf("the check's run: got %s %s", m.Type, clip(string(m.Payload), 200))
		}
	}
	w.nc.Close()
	return nil, err
}

// frames encodes ms as one buffer, to be sent in one write.
func frames(limit int, ms ...*Message) ([]byte, error) {
	var b bytes.Buffer
	for _, m := range ms {
		if err := WriteFrame(&b, m, limit); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// runFrame is the run request id of the check's run.
func (k *checker) runFrame(id uint64) *Message {
	b, err := json.Marshal(Run{Spec: k.o.Spec})
	if err != nil {
		b = nil // the agent refuses a run without payload: the failure shows
	}
	return &Message{Type: TypeRun, ID: id, Payload: b}
}

// overlapped tells whether the run id on w went on after a request of
// another connection was accepted (the caller saw that request's first
// frame before calling). It pings on w: the pong leaves the agent after the
// other request was accepted, and a token of id that follows the pong on
// this ordered stream was emitted after that too. An agent that answers
// busy ends a run's stream of tokens before it frees the engine. It returns
// how many tokens of id follow the pong (0: no evidence of overlap).
func (w *wire) overlapped(id uint64) (int, error) {
	const pingID = 1<<32 + 1
	if err := w.send(TypePing, pingID, nil); err != nil {
		return 0, err
	}
	ponged, after := false, 0
	for {
		m, err := w.next()
		if err != nil {
			return 0, fmt.Errorf("the first run's stream: %w", err)
		}
		switch {
		case m.ID == pingID && m.Type == TypePong:
			ponged = true
		case m.ID == id && m.Type == TypeToken:
			if ponged {
				after++
			}
		case m.ID == id:
			if ponged {
				return after, nil
			}
			// The run ended before the pong: wait for the pong, then
			// nothing of the run follows.
			for !ponged {
				m, err := w.next()
				if err != nil {
					return 0, fmt.Errorf("waiting for pong: %w", err)
				}
				ponged = m.ID == pingID && m.Type == TypePong
			}
			return 0, nil
		}
	}
}

// secondRunAnswer reads, from a connection that was sent run 1 and then
// run 2, the frames up to the answer to 2 (it must be busy) and run 1's
// first token or end. It tells whether 1 ended before. Run 1 answered busy
// (the engine held elsewhere) is ErrBusy. A run 2 accepted is a fault if 1
// streams on after 2's first frame (the stream is ordered: an agent that
// answers busy sends all of a run's tokens before it frees the connection);
// if 1 ends without streaming on, it ended before 2 reached the agent and
// the attempt cannot decide (errRaced).
func secondRunAnswer(next func() (*Message, error)) (ended bool, err error) {
	accepted, busy, started := false, false, false
	for !busy || !(started || ended) {
		m, err := next()
		if err != nil {
			return ended, err
		}
		switch {
		case m.ID == 1 && m.Type == TypeBusy && !started:
			return false, &RemoteError{Code: CodeBusy, Message: string(m.Payload)}
		case m.ID == 1 && m.Type == TypeToken:
			if accepted {
				return false, errors.New("a second run on the connection of a running run was accepted, and the first run went on streaming: want busy")
			}
			started = true
		case m.ID == 1:
			if accepted {
				return true, errRaced
			}
			if !started {
				return true, fmt.Errorf("the check's run: got %s %s before any token", m.Type, clip(string(m.Payload), 200))
			}
			ended = true
		case m.ID == 2 && m.Type == TypeBusy && !accepted:
			busy = true
		case m.ID == 2 && m.Type == TypeToken:
			if ended {
				return true, errRaced
			}
			accepted = true
		case m.ID == 2:
			return ended, fmt.Errorf("a second run on a busy connection: got %s %s, want busy", m.Type, clip(string(m.Payload), 200))
		}
	}
	return ended, nil
}

// frameOrErr describes what came instead of the frame wanted.
func frameOrErr(m *Message, err error) string {
	if err != nil {
		return err.Error()
	}
	return m.Type + " " + clip(string(m.Payload), 200)
}

// busySameAndCancel: a second run on the connection of a running run is
// answered busy; a cancel of the running run is confirmed with error
// cancelled within CancelWithin of sending it; the connection stays usable.
// An attempt whose run ends before busy or cancel could be probed is
// repeated.
func (k *checker) busySameAndCancel(ctx context.Context) (string, error) {
	var skip skipError
	for range probeAttempts {
		d, err := k.busySameAndCancelOnce(ctx)
		if !errors.As(err, &skip) {
			return d, err
		}
	}
	return "", skipError(fmt.Sprintf("%s (%d runs tried)", skip, probeAttempts))
}

func (k *checker) busySameAndCancelOnce(ctx context.Context) (string, error) {
	var w *wire
	var ended bool
	err := k.whenFree(func() error {
		var err error
		if w, err = k.greeted(ctx); err != nil {
			return err
		}
		// Both runs in one write: the agent reads run 2 right after run 1,
		// long before run 1 could end.
		b, err := frames(w.limit, k.runFrame(1), k.runFrame(2))
		if err == nil {
			err = w.sendRaw(b)
		}
		if err == nil {
			ended, err = secondRunAnswer(w.next)
		}
		if err != nil {
			w.nc.Close()
		}
		return err
	})
	if err == nil {
		defer w.nc.Close()
	}
	if errors.Is(err, errRaced) {
		return "", skipError("the run ended before the second run reached the agent (which then ran it): give --spec a longer run")
	}
	if err != nil {
		return "", err
	}
	if ended {
		return "", skipError("busy answered, but the run ended before cancel could be probed: give --spec a longer run")
	}
	start := time.Now()
	if err := w.send(TypeCancel, 1, nil); err != nil {
		return "", err
	}
	for {
		m, err := w.next()
		if err != nil {
			return "", err
		}
		if m.ID != 1 || m.Type == TypeToken {
			continue
		}
		if m.Type == TypeResult {
			return "", skipError("busy answered, but the run finished before the cancel arrived: give --spec a longer run")
		}
		var p ErrorPayload
		if m.Type != TypeError || json.Unmarshal(m.Payload, &p) != nil || p.Code != CodeCancelled {
			return "", fmt.Errorf("after cancel: got %s %s, want error cancelled", m.Type, clip(string(m.Payload), 200))
		}
		break
	}
	took := time.Since(start)
	if took > k.o.CancelWithin {
		return "", fmt.Errorf("cancel confirmed after %v, more than %v: the engine does not stop when cancelled", took.Round(time.Millisecond), k.o.CancelWithin)
	}
	if err := w.send(TypePing, 3, nil); err != nil {
		return "", err
	}
	if m, err := w.next(); err != nil || m.Type != TypePong || m.ID != 3 {
		return "", fmt.Errorf("connection unusable after cancel: %v", frameOrErr(m, err))
	}
	return fmt.Sprintf("busy for the second run; cancel confirmed in %v; connection still usable", took.Round(time.Microsecond)), nil
}

func (k *checker) cancelUnknown(ctx context.Context) (string, error) {
	w, err := k.greeted(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeCancel, 99, nil); err != nil {
		return "", err
	}
	if err := w.expectError(99, CodeNoSuchRun); err != nil {
		return "", err
	}
	return "error no_such_run, connection still usable", nil
}

func (k *checker) disconnect(ctx context.Context) (string, error) {
	w, err := k.startRun(ctx, 1)
	if err != nil {
		return "", err
	}
	w.nc.Close()
	start := time.Now()
	deadline := start.Add(k.o.Client.Silence)
	for {
		w, err := k.tryRun(ctx, 1)
		if err == nil {
			w.nc.Close()
			return fmt.Sprintf("a new run streamed %v after the disconnect", time.Since(start).Round(time.Millisecond)), nil
		}
		if !errors.Is(err, ErrBusy) {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("still busy %v after the client disconnected", k.o.Client.Silence)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
