package usbmux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Protocol constants (usbmuxd-proto.h).
const (
	headerBytes = 16
	// VersionPlist is the header version of plist packets.
	VersionPlist = 1
	// MessagePlist is the header message type of plist packets.
	MessagePlist = 8
	// MaxPacketBytes bounds one packet (header included).
	MaxPacketBytes = 4 << 20
)

// Header is a packet header.
type Header struct {
	Length  uint32 // whole packet, header included
	Version uint32
	Message uint32
	Tag     uint32
}

// ErrPacket is a malformed packet.
var ErrPacket = errors.New("usbmux: malformed packet")

// WritePacket writes one plist packet with tag carrying body.
func WritePacket(w io.Writer, tag uint32, body []byte) error {
	if len(body) > MaxPacketBytes-headerBytes {
		return fmt.Errorf("%w: %d-byte body is too large", ErrPacket, len(body))
	}
	buf := make([]byte, headerBytes+len(body))
	binary.LittleEndian.PutUint32(buf[0:], uint32(len(buf)))
	binary.LittleEndian.PutUint32(buf[4:], VersionPlist)
	binary.LittleEndian.PutUint32(buf[8:], MessagePlist)
	binary.LittleEndian.PutUint32(buf[12:], tag)
	copy(buf[headerBytes:], body)
	_, err := w.Write(buf)
	return err
}

// ReadPacket reads one packet. Its announced length is checked before the
// body is allocated.
func ReadPacket(r io.Reader) (Header, []byte, error) {
	var b [headerBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Header{}, nil, err
	}
	h := Header{
		Length:  binary.LittleEndian.Uint32(b[0:]),
		Version: binary.LittleEndian.Uint32(b[4:]),
		Message: binary.LittleEndian.Uint32(b[8:]),
		Tag:     binary.LittleEndian.Uint32(b[12:]),
	}
	if h.Length < headerBytes || h.Length > MaxPacketBytes {
		return h, nil, fmt.Errorf("%w: length %d (want %d to %d)", ErrPacket, h.Length, headerBytes, MaxPacketBytes)
	}
	body := make([]byte, h.Length-headerBytes)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, err
	}
	return h, body, nil
}
