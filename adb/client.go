package adb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultPort is where the adb server listens unless ANDROID_ADB_SERVER_PORT
// says otherwise.
const DefaultPort = 5037

// DefaultTimeout bounds each exchange with the server when the context has
// no earlier deadline.
const DefaultTimeout = 10 * time.Second

// MaxShellBytes bounds the output Shell reads.
const MaxShellBytes = 64 << 10

// DefaultAddress is the adb server's HOST:PORT, from ANDROID_ADB_SERVER_ADDRESS
// and ANDROID_ADB_SERVER_PORT as adb reads them (default 127.0.0.1:5037).
func DefaultAddress() string {
	host := os.Getenv("ANDROID_ADB_SERVER_ADDRESS")
	if host == "" {
		host = "127.0.0.1"
	}
	port := os.Getenv("ANDROID_ADB_SERVER_PORT")
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	}
	return net.JoinHostPort(host, port)
}

// ErrNoServer is an adb server that cannot be reached.
var ErrNoServer = errors.New("adb server not reachable")

// ErrProtocol is a reply that does not follow the host protocol.
var ErrProtocol = errors.New("adb: not an adb server reply")

// Failure is the server's FAIL answer to a request.
type Failure struct {
	Request string // the request, e.g. "host:transport:SERIAL"
	Message string // the server's message, e.g. "device 'SERIAL' not found"
}

func (f *Failure) Error() string { return "adb " + f.Request + ": " + f.Message }

// conn is one connection to the server.
type conn struct {
	nc   net.Conn
	addr string
}

// dial connects to the server at addr; the connection's deadline is ctx's
// (or DefaultTimeout from now) until it is handed over as a stream.
func dial(ctx context.Context, addr string) (*conn, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(DefaultTimeout)
	}
	d := net.Dialer{Deadline: dl}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w at %s (is it running? adb start-server): %v", ErrNoServer, addr, err)
	}
	nc.SetDeadline(dl)
	return &conn{nc: nc, addr: addr}, nil
}

// request sends req and reads OKAY, or the FAIL message as a *Failure.
func (c *conn) request(req string) error {
	if len(req) > 0xffff {
		return fmt.Errorf("adb %.40s...: request too long", req)
	}
	if _, err := fmt.Fprintf(c.nc, "%04x%s", len(req), req); err != nil {
		return fmt.Errorf("adb %s: %w", req, err)
	}
	var status [4]byte
	if _, err := io.ReadFull(c.nc, status[:]); err != nil {
		return fmt.Errorf("adb %s: %w", req, err)
	}
	switch string(status[:]) {
	case "OKAY":
		return nil
	case "FAIL":
		msg, err := c.block()
		if err != nil {
			return fmt.Errorf("adb %s: FAIL, then %w", req, err)
		}
		return &Failure{Request: req, Message: msg}
	}
	return fmt.Errorf("adb %s: %w: status %q", req, ErrProtocol, status[:])
}

// block reads one length-prefixed block.
func (c *conn) block() (string, error) {
	var hex [4]byte
	if _, err := io.ReadFull(c.nc, hex[:]); err != nil {
		return "", err
	}
	n, err := strconv.ParseUint(string(hex[:]), 16, 16)
	if err != nil {
		return "", fmt.Errorf("%w: length %q", ErrProtocol, hex[:])
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.nc, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// query sends a host request whose OKAY carries one block, and returns it.
func query(ctx context.Context, addr, req string) (string, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.nc.Close()
	if err := c.request(req); err != nil {
		return "", err
	}
	s, err := c.block()
	if err != nil {
		return "", fmt.Errorf("adb %s: %w", req, err)
	}
	return s, nil
}

// ServerVersion is the server's protocol version (host:version; 41 for
// current servers).
func ServerVersion(ctx context.Context, addr string) (int, error) {
	s, err := query(ctx, addr, "host:version")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 16, 16)
	if err != nil {
		return 0, fmt.Errorf("adb host:version: %w: %q", ErrProtocol, s)
	}
	return int(v), nil
}

// Device is one device the server lists.
type Device struct {
	Serial string `json:"serial"`
	// State is adb's: device (ready), offline, unauthorized (the phone has
	// not accepted this host's key), recovery, ...
	State       string `json:"state"`
	Model       string `json:"model,omitempty"`   // e.g. "Pixel_8"
	Product     string `json:"product,omitempty"` // e.g. "shiba"
	Name        string `json:"device,omitempty"`  // the device name, e.g. "shiba"
	Connection  string `json:"connection,omitempty"`
	TransportID string `json:"transport_id,omitempty"`
}

// Devices lists the devices the server at addr knows (host:devices-l).
func Devices(ctx context.Context, addr string) ([]Device, error) {
	s, err := query(ctx, addr, "host:devices-l")
	if err != nil {
		return nil, err
	}
	return ParseDevices(s)
}

// ParseDevices reads host:devices-l's reply: one device a line, its serial,
// its state, then key:value fields; an unknown field is ignored, a field
// given as a bare word (the connection, e.g. "usb:1-1") too.
func ParseDevices(s string) ([]Device, error) {
	devs := []Device{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("adb host:devices-l: %w: line %d has no state: %q", ErrProtocol, line, sc.Text())
		}
		d := Device{Serial: f[0], State: f[1]}
		if d.State == "no" && len(f) > 2 && f[2] == "permissions" {
			d.State = "no permissions" // and adb's explanation, skipped below
		}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, ":")
			switch k {
			case "usb":
				d.Connection = kv
			case "product":
				d.Product = v
			case "model":
				d.Model = v
			case "device":
				d.Name = v
			case "transport_id":
				d.TransportID = v
			}
		}
		devs = append(devs, d)
	}
	return devs, sc.Err()
}

// transport connects to the server and switches the connection to the
// device with this serial.
func transport(ctx context.Context, addr, serial string) (*conn, error) {
	if serial == "" || strings.ContainsAny(serial, " \t\r\n") {
		return nil, fmt.Errorf("adb: serial %q: want a device serial as adb devices lists it", serial)
	}
	c, err := dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	if err := c.request("host:transport:" + serial); err != nil {
		c.nc.Close()
		return nil, err
	}
	return c, nil
}

// DialDevice opens a byte stream to TCP port on the device with this serial,
// through the server at addr (host:transport:SERIAL, then tcp:PORT on the
// same connection). The stream has no deadline.
func DialDevice(ctx context.Context, addr, serial string, port uint16) (net.Conn, error) {
	if port == 0 {
		return nil, fmt.Errorf("adb: device port 0")
	}
	c, err := transport(ctx, addr, serial)
	if err != nil {
		return nil, err
	}
	if err := c.request("tcp:" + strconv.Itoa(int(port))); err != nil {
		c.nc.Close()
		return nil, err
	}
	c.nc.SetDeadline(time.Time{})
	return c.nc, nil
}

// Shell runs command in the device's shell (shell:COMMAND) and returns its
// output, at most MaxShellBytes.
func Shell(ctx context.Context, addr, serial, command string) (string, error) {
	c, err := transport(ctx, addr, serial)
	if err != nil {
		return "", err
	}
	defer c.nc.Close()
	if err := c.request("shell:" + command); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(c.nc, MaxShellBytes+1))
	if err != nil {
		return "", fmt.Errorf("adb shell %s: %w", command, err)
	}
	if len(b) > MaxShellBytes {
		return "", fmt.Errorf("adb shell %s: more than %d bytes of output", command, MaxShellBytes)
	}
	return string(b), nil
}

// AndroidVersion is the device's Android release and SDK level (its
// ro.build.version.release and ro.build.version.sdk properties).
func AndroidVersion(ctx context.Context, addr, serial string) (release string, sdk int, err error) {
	release, err = Shell(ctx, addr, serial, "getprop ro.build.version.release")
	if err != nil {
		return "", 0, err
	}
	s, err := Shell(ctx, addr, serial, "getprop ro.build.version.sdk")
	if err != nil {
		return "", 0, err
	}
	sdk, err = strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return "", 0, fmt.Errorf("adb shell getprop ro.build.version.sdk: not a number: %q", strings.TrimSpace(s))
	}
	return strings.TrimSpace(release), sdk, nil
}
