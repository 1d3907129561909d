package agent

import (
	"context"
	"fmt"
	"slices"
	"time"
)

func (k *checker) wrongToken(ctx context.Context) (string, error) {
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	other, err := NewToken()
	if err != nil {
		return "", err
	}
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: ProtocolVersion, Token: other, Client: "check"}); err != nil {
		return "", err
	}
	return w.fatal(0, CodeAuth)
}

func (k *checker) versionMismatch(ctx context.Context) (string, error) {
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: ProtocolVersion + 1000, Token: k.token, Client: "check"}); err != nil {
		return "", err
	}
	return w.fatal(0, CodeVersion)
}

// previousVersion: a hello in MinProtocolVersion is welcomed in that
// version, without the capabilities it does not have.
func (k *checker) previousVersion(ctx context.Context) (string, error) {
	if MinProtocolVersion == ProtocolVersion {
		return "", skipError("this client speaks one version")
	}
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	if err := w.send(TypeHello, 0, Hello{ProtocolVersion: MinProtocolVersion, Token: k.token, Client: "check"}); err != nil {
		return "", err
	}
	m, err := w.next()
	if err != nil {
		return "", err
	}
	var wl Welcome
	if err := want(m, TypeWelcome, &wl); err != nil {
		return "", fmt.Errorf("a version-%d hello: %w", MinProtocolVersion, err)
	}
	if wl.ProtocolVersion != MinProtocolVersion || slices.Contains(wl.Capabilities, CapSeries) {
		return "", fmt.Errorf("a version-%d hello welcomed in version %d with capabilities %v (want version %d, no %s)",
			MinProtocolVersion, wl.ProtocolVersion, wl.Capabilities, MinProtocolVersion, CapSeries)
	}
	return fmt.Sprintf("welcome in version %d, capabilities %v", wl.ProtocolVersion, wl.Capabilities), nil
}

func rawBody(body string) []byte {
	b := make([]byte, headerBytes+len(body))
	b[0], b[1], b[2], b[3] = byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
	copy(b[headerBytes:], body)
	return b
}

// fatalFrame sends raw bytes after a valid hello and expects a fatal error.
func (k *checker) fatalFrame(b []byte, code string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		w, err := k.raw(ctx)
		if err != nil {
			return "", err
		}
		defer w.nc.Close()
		if err := w.hello(k.token); err != nil {
			return "", err
		}
		if err := w.sendRaw(b); err != nil {
			return "", err
		}
		return w.fatal(0, code)
	}
}

// oversize announces a frame one byte above the agent's limit and never
// sends the body: the agent must refuse on the header alone.
func (k *checker) oversize(ctx context.Context) (string, error) {
	n := uint32(k.welcome.Limits.MaxFrameBytes + 1)
	d, err := k.fatalFrame([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, CodeTooLarge)(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (announced %d bytes, sent none)", d, n), nil
}

func (k *checker) silentClient(ctx context.Context) (string, error) {
	hs := time.Duration(k.welcome.Limits.HandshakeTimeoutNS)
	if hs > 30*time.Second {
		return "", skipError(fmt.Sprintf("handshake timeout %v is too long to wait for", hs))
	}
	w, err := k.raw(ctx)
	if err != nil {
		return "", err
	}
	defer w.nc.Close()
	w.wait = hs + 5*time.Second
	start := time.Now()
	if _, err := w.fatal(0, CodeTimeout); err != nil {
		return "", err
	}
	return fmt.Sprintf("error timeout after %v (limit %v), connection closed", time.Since(start).Round(time.Millisecond), hs), nil
}
