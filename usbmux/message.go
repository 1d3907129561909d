package usbmux

import (
	"fmt"
	"strings"

	"howett.net/plist"
)

// Result numbers of a Result message.
const (
	ResultOK          = 0
	ResultBadCommand  = 1
	ResultBadDevice   = 2
	ResultConnRefused = 3
	ResultBadVersion  = 6
)

// ResultError is a non-zero Result from the daemon.
type ResultError struct {
	Request string
	Number  uint64
}

// Error implements error.
func (e *ResultError) Error() string {
	name := map[uint64]string{ResultBadCommand: "bad command", ResultBadDevice: "no such device",
		ResultConnRefused: "connection refused by the device", ResultBadVersion: "bad protocol version"}[e.Number]
	if name == "" {
		name = "unknown result"
	}
	return fmt.Sprintf("usbmuxd %s: %s (result %d)", e.Request, name, e.Number)
}

// Device is one device the daemon sees.
type Device struct {
	DeviceID       uint64 `json:"device_id"`
	UDID           string `json:"udid"`            // Properties.SerialNumber
	ConnectionType string `json:"connection_type"` // "USB" or "Network"
	ProductID      uint64 `json:"product_id,omitempty"`
	LocationID     uint64 `json:"location_id,omitempty"`
	SpeedBitsPerS  uint64 `json:"speed_bits_per_s,omitempty"` // Properties.ConnectionSpeed
}

// Event is one message after Listen.
type Event struct {
	Type     string  // Attached, Detached or Paired
	DeviceID uint64  // the device concerned
	Device   *Device // for Attached
}

// properties are a device's Properties dictionary.
type properties struct {
	DeviceID        uint64 `plist:"DeviceID"`
	SerialNumber    string `plist:"SerialNumber"`
	ConnectionType  string `plist:"ConnectionType"`
	ProductID       uint64 `plist:"ProductID"`
	LocationID      uint64 `plist:"LocationID"`
	ConnectionSpeed uint64 `plist:"ConnectionSpeed"`
}

type deviceEntry struct {
	DeviceID    uint64      `plist:"DeviceID"`
	MessageType string      `plist:"MessageType"`
	Properties  *properties `plist:"Properties"`
}

// reply is any message from the daemon; each kind fills its own fields.
type reply struct {
	MessageType string        `plist:"MessageType"`
	Number      *uint64       `plist:"Number"`
	DeviceList  []deviceEntry `plist:"DeviceList"`
	DeviceID    uint64        `plist:"DeviceID"`
	Properties  *properties   `plist:"Properties"`
}

// request is a message to the daemon.
type request struct {
	MessageType         string `plist:"MessageType"`
	ClientVersionString string `plist:"ClientVersionString"`
	ProgName            string `plist:"ProgName"`
	LibUSBMuxVersion    uint64 `plist:"kLibUSBMuxVersion"`
	DeviceID            uint64 `plist:"DeviceID,omitempty"`
	PortNumber          uint64 `plist:"PortNumber,omitempty"`
}

// clientVersion names this client to the daemon.
const clientVersion = "lessim-usbmux 1"

func encodeRequest(r request) ([]byte, error) {
	r.ClientVersionString, r.ProgName, r.LibUSBMuxVersion = clientVersion, "lessim", 3
	return plist.Marshal(r, plist.XMLFormat)
}

// decodeReply decodes a daemon message (XML or binary plist). Malformed
// input is an error, never a panic.
func decodeReply(body []byte) (r reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: plist decoder failed: %v", ErrPacket, p)
		}
	}()
	if _, err := plist.Unmarshal(body, &r); err != nil {
		return reply{}, fmt.Errorf("%w: %v", ErrPacket, err)
	}
	if r.MessageType == "" && r.DeviceList == nil {
		return reply{}, fmt.Errorf("%w: no MessageType", ErrPacket)
	}
	return r, nil
}

func (p *properties) device(id uint64) (Device, error) {
	if p == nil {
		return Device{}, fmt.Errorf("%w: device %d has no Properties", ErrPacket, id)
	}
	if p.SerialNumber == "" {
		return Device{}, fmt.Errorf("%w: device %d has no SerialNumber", ErrPacket, id)
	}
	if id == 0 {
		id = p.DeviceID
	}
	return Device{DeviceID: id, UDID: p.SerialNumber, ConnectionType: p.ConnectionType, ProductID: p.ProductID,
		LocationID: p.LocationID, SpeedBitsPerS: p.ConnectionSpeed}, nil
}

// SameUDID compares UDIDs as libusbmuxd presents them: case-insensitively,
// with the dash of 25-character UDIDs (00008030-001A…) optional.
func SameUDID(a, b string) bool {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "")) }
	return norm(a) == norm(b)
}

// swap16 puts a port in network byte order as the daemon reads PortNumber.
func swap16(p uint16) uint64 { return uint64(p>>8 | p<<8) }
