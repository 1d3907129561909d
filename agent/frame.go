package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxFrameBytes is the protocol's hard ceiling on one frame's body. A peer
// may announce a smaller limit (Welcome.Limits); neither side ever allocates
// for a frame whose announced length is above its limit.
const MaxFrameBytes = 16 << 20

// headerBytes is the frame header: the body length as a big-endian uint32.
const headerBytes = 4

// Message is one frame's body: a type, the id of the request it belongs to
// (chosen by the client; replies and stream items echo it) and the type's
// payload.
type Message struct {
	Type    string          `json:"type"`
	ID      uint64          `json:"id"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// ProtocolError is a peer that broke the protocol (a malformed, oversized or
// unexpected frame) or a request refused by the agent. Code is one of the
// Code* constants; it is what an error frame carries.
type ProtocolError struct {
	Code    string
	Message string
	// text: the frame's length header read as printable text, so the peer
	// speaks another protocol (an HTTP server's "HTTP/1.1 400", an SSH
	// banner), not lessim frames.
	text bool
}

// Error implements error.
func (e *ProtocolError) Error() string { return e.Code + ": " + e.Message }

func protoErr(code, format string, a ...any) *ProtocolError {
	return &ProtocolError{Code: code, Message: fmt.Sprintf(format, a...)}
}

// WriteFrame writes m as one frame: length header and JSON body in a single
// Write. It refuses a body above limit (MaxFrameBytes when limit <= 0).
func WriteFrame(w io.Writer, m *Message, limit int) error {
	if limit <= 0 || limit > MaxFrameBytes {
		limit = MaxFrameBytes
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", m.Type, err)
	}
	if len(body) > limit {
		return protoErr(CodeTooLarge, "%s frame of %d bytes is above the %d-byte limit", m.Type, len(body), limit)
	}
	buf := make([]byte, headerBytes+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[headerBytes:], body)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one frame and decodes its envelope. The announced length is
// checked against limit (MaxFrameBytes when limit <= 0) before anything is
// allocated. I/O errors (io.EOF, timeouts) are returned as they are; a frame
// that is empty, too large or not a valid envelope gives a *ProtocolError.
func ReadFrame(r io.Reader, limit int) (*Message, error) {
	return readFrame(r, limit, nil)
}

// readFrame is ReadFrame with a hook called between header and body (the
// server arms its per-frame read deadline there).
func readFrame(r io.Reader, limit int, afterHeader func()) (*Message, error) {
	if limit <= 0 || limit > MaxFrameBytes {
		limit = MaxFrameBytes
	}
	var hdr [headerBytes]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, protoErr(CodeBadFrame, "empty frame")
	}
	if uint64(n) > uint64(limit) {
		if isText(hdr[:]) {
			e := protoErr(CodeTooLarge, "frame header %q reads as text, not a length: the peer speaks another protocol (HTTP?)", hdr[:])
			e.text = true
			return nil, e
		}
		return nil, protoErr(CodeTooLarge, "frame of %d bytes announced; the limit is %d", n, limit)
	}
	if afterHeader != nil {
		afterHeader()
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return DecodeMessage(body)
}

// isText reports whether b is all printable ASCII. NB: a printable first
// byte announces at least 512 MiB, far above any frame limit, so only a
// header over the limit is tested.
func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// DecodeMessage decodes a frame body strictly: one JSON object with exactly
// the envelope's fields, a known type and nothing after it.
func DecodeMessage(body []byte) (*Message, error) {
	var m Message
	if err := decodeStrict(body, &m); err != nil {
		return nil, protoErr(CodeBadFrame, "frame body is not a message: %v", err)
	}
	if !knownType(m.Type) {
		return nil, protoErr(CodeUnknownType, "unknown message type %q", clip(m.Type, 40))
	}
	return &m, nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
