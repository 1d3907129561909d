package usbmux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// DefaultSocket is where usbmuxd listens on Linux and macOS.
const DefaultSocket = "/var/run/usbmuxd"

// DefaultTimeout bounds each exchange with the daemon when the context has
// no earlier deadline.
const DefaultTimeout = 10 * time.Second

// Address is where to reach the daemon: a unix socket path or a TCP
// HOST:PORT (Network "unix" or "tcp").
type Address struct {
	Network, Addr string
}

// String renders a in USBMUXD_SOCKET_ADDRESS form.
func (a Address) String() string {
	if a.Network == "unix" {
		return "UNIX:" + a.Addr
	}
	return a.Addr
}

// DefaultAddress is the daemon's address: USBMUXD_SOCKET_ADDRESS when set
// (as libusbmuxd reads it: "UNIX:/path" or "HOST:PORT"), else DefaultSocket.
func DefaultAddress() Address {
	return ParseAddress(os.Getenv("USBMUXD_SOCKET_ADDRESS"))
}

// ParseAddress reads a USBMUXD_SOCKET_ADDRESS value; empty means DefaultSocket.
func ParseAddress(s string) Address {
	switch {
	case s == "":
		return Address{"unix", DefaultSocket}
	case strings.HasPrefix(s, "UNIX:"):
		return Address{"unix", strings.TrimPrefix(s, "UNIX:")}
	case strings.HasPrefix(s, "/"):
		return Address{"unix", s}
	}
	return Address{"tcp", s}
}

// Conn is one connection to the daemon. Each request uses a fresh tag; after
// Listen it only reads events, after Connect it is no longer a Conn.
type Conn struct {
	nc  net.Conn
	tag uint32
}

// Dial connects to the daemon at a.
func Dial(ctx context.Context, a Address) (*Conn, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, a.Network, a.Addr)
	if err != nil {
		return nil, fmt.Errorf("usbmuxd at %s is not reachable (is usbmuxd running?): %w", a, err)
	}
	return &Conn{nc: nc}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// exchange sends one request and reads the reply with the same tag.
func (c *Conn) exchange(ctx context.Context, r request) (reply, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	dl, _ := ctx.Deadline()
	c.nc.SetDeadline(dl)
	defer c.nc.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	defer stop()
	body, err := encodeRequest(r)
	if err != nil {
		return reply{}, err
	}
	c.tag++
	if err := WritePacket(c.nc, c.tag, body); err != nil {
		return reply{}, fmt.Errorf("usbmuxd %s: %w", r.MessageType, err)
	}
	for {
		h, b, err := ReadPacket(c.nc)
		if err != nil {
			return reply{}, fmt.Errorf("usbmuxd %s: %w", r.MessageType, err)
		}
		if h.Version != VersionPlist || h.Message != MessagePlist {
			return reply{}, fmt.Errorf("usbmuxd %s: %w: version %d, message %d (want plist, %d/%d)", r.MessageType, ErrPacket, h.Version, h.Message, VersionPlist, MessagePlist)
		}
		rep, err := decodeReply(b)
		if err != nil {
			return reply{}, fmt.Errorf("usbmuxd %s: %w", r.MessageType, err)
		}
		if h.Tag == c.tag {
			return rep, nil
		}
		// A packet for another tag (an event racing the reply): skip it.
	}
}

// result checks a Result reply.
func result(req string, rep reply) error {
	if rep.MessageType != "Result" || rep.Number == nil {
		return fmt.Errorf("usbmuxd %s: %w: expected a Result, got %q", req, ErrPacket, rep.MessageType)
	}
	if *rep.Number != ResultOK {
		return &ResultError{Request: req, Number: *rep.Number}
	}
	return nil
}

// ListDevices asks the daemon for the devices attached now.
func (c *Conn) ListDevices(ctx context.Context) ([]Device, error) {
	rep, err := c.exchange(ctx, request{MessageType: "ListDevices"})
	if err != nil {
		return nil, err
	}
	if rep.MessageType == "Result" {
		return nil, result("ListDevices", rep)
	}
	devs := make([]Device, 0, len(rep.DeviceList))
	for _, e := range rep.DeviceList {
		d, err := e.Properties.device(e.DeviceID)
		if err != nil {
			return nil, fmt.Errorf("usbmuxd ListDevices: %w", err)
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// Listen subscribes to attach and detach events; read them with Next. The
// daemon first reports every device already attached.
func (c *Conn) Listen(ctx context.Context) error {
	rep, err := c.exchange(ctx, request{MessageType: "Listen"})
	if err != nil {
		return err
	}
	return result("Listen", rep)
}

// Next waits for the next event after Listen, until ctx is done.
func (c *Conn) Next(ctx context.Context) (Event, error) {
	dl, hasDeadline := ctx.Deadline()
	c.nc.SetReadDeadline(dl) // the zero time (no deadline) when ctx has none
	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Now()) })
	defer stop()
	h, b, err := ReadPacket(c.nc)
	if err != nil {
		if ctx.Err() != nil {
			return Event{}, ctx.Err()
		}
		if hasDeadline && !time.Now().Before(dl) {
			return Event{}, context.DeadlineExceeded // the socket's deadline fired just before ctx's
		}
		return Event{}, fmt.Errorf("usbmuxd events: %w", err)
	}
	if h.Message != MessagePlist {
		return Event{}, fmt.Errorf("usbmuxd events: %w: message type %d", ErrPacket, h.Message)
	}
	rep, err := decodeReply(b)
	if err != nil {
		return Event{}, fmt.Errorf("usbmuxd events: %w", err)
	}
	ev := Event{Type: rep.MessageType, DeviceID: rep.DeviceID}
	switch rep.MessageType {
	case "Attached":
		d, err := rep.Properties.device(rep.DeviceID)
		if err != nil {
			return Event{}, fmt.Errorf("usbmuxd events: %w", err)
		}
		ev.Device, ev.DeviceID = &d, d.DeviceID
	case "Detached", "Paired":
	default:
		return Event{}, fmt.Errorf("usbmuxd events: %w: unexpected message %q", ErrPacket, rep.MessageType)
	}
	return ev, nil
}

// Connect asks the daemon for a stream to TCP port on the device and, on
// success, returns the socket as that stream (c must not be used again). On
// failure c is closed.
func (c *Conn) Connect(ctx context.Context, deviceID uint64, port uint16) (net.Conn, error) {
	rep, err := c.exchange(ctx, request{MessageType: "Connect", DeviceID: deviceID, PortNumber: swap16(port)})
	if err == nil {
		err = result("Connect", rep)
	}
	if err != nil {
		c.nc.Close()
		return nil, err
	}
	return c.nc, nil
}

// ErrNoDevice is a UDID the daemon does not list.
var ErrNoDevice = errors.New("usbmux: no such device")

// Devices lists the daemon's devices over a short-lived connection.
func Devices(ctx context.Context, a Address) ([]Device, error) {
	c, err := Dial(ctx, a)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ListDevices(ctx)
}

// DialDevice opens a stream to port on the device with this UDID: it lists
// the devices on one connection and connects on another.
func DialDevice(ctx context.Context, a Address, udid string, port uint16) (net.Conn, error) {
	devs, err := Devices(ctx, a)
	if err != nil {
		return nil, err
	}
	var id uint64
	found := false
	seen := []string{}
	for _, d := range devs {
		if SameUDID(d.UDID, udid) {
			id, found = d.DeviceID, true
			break
		}
		seen = append(seen, d.UDID)
	}
	if !found {
		return nil, fmt.Errorf("%w: %s (usbmuxd at %s lists %d device(s)%s)", ErrNoDevice, udid, a, len(devs), strings.Join(append([]string{""}, seen...), " "))
	}
	c, err := Dial(ctx, a)
	if err != nil {
		return nil, err
	}
	return c.Connect(ctx, id, port)
}
