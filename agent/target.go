package agent

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/lessim/lessim/adb"
	"github.com/lessim/lessim/usbmux"
)

// DefaultADBPort is an adb:// target's default port (lessim agent's).
const DefaultADBPort = 7070

// Target is where an agent listens: tcp://HOST:PORT, usb://UDID:PORT (a TCP
// port on an iOS device reached through usbmuxd), or adb://SERIAL[:PORT] (a
// TCP port on an Android device reached through the adb server at
// adb.DefaultAddress()).
type Target struct {
	Scheme string // "tcp", "usb" or "adb"
	Host   string // tcp: host name or address
	UDID   string // usb: the device's UDID
	Serial string // adb: the device's serial, as adb devices lists it
	Port   uint16
}

// String renders t as it is written on the command line.
func (t Target) String() string {
	switch t.Scheme {
	case "usb":
		return "usb://" + t.UDID + ":" + strconv.Itoa(int(t.Port))
	case "adb":
		return "adb://" + t.Serial + ":" + strconv.Itoa(int(t.Port))
	}
	return "tcp://" + net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port)))
}

// ParseTarget reads tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL[:PORT].
// An adb serial may itself hold a colon (a device adb reaches over the
// network, 192.168.1.5:5555): the text after the last colon is the port,
// so such a target names its port (adb://192.168.1.5:5555:7070).
func ParseTarget(s string) (Target, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "tcp" && scheme != "usb" && scheme != "adb") {
		return Target{}, fmt.Errorf("target %q: want tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL[:PORT]", s)
	}
	if scheme == "adb" && !strings.Contains(rest, ":") {
		rest += ":" + strconv.Itoa(DefaultADBPort)
	}
	host, port, err := net.SplitHostPort(rest)
	if scheme == "adb" {
		i := strings.LastIndexByte(rest, ':')
		host, port, err = rest[:i], rest[i+1:], nil
	}
	if err != nil {
		return Target{}, fmt.Errorf("target %q: %v", s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return Target{}, fmt.Errorf("target %q: port %q is not 1-65535", s, port)
	}
	t := Target{Scheme: scheme, Port: uint16(p)}
	if host == "" {
		return Target{}, fmt.Errorf("target %q: no %s", s, map[string]string{"tcp": "host", "usb": "UDID", "adb": "serial"}[scheme])
	}
	switch scheme {
	case "usb":
		for _, c := range host {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
				return Target{}, fmt.Errorf("target %q: a UDID is hex digits and dashes", s)
			}
		}
		t.UDID = host
	case "adb":
		for _, c := range host {
			if c <= ' ' || c >= 0x7f || c == '/' {
				return Target{}, fmt.Errorf("target %q: a serial is printable ASCII without spaces or slashes", s)
			}
		}
		t.Serial = host
	default:
		t.Host = host
	}
	return t, nil
}

// dial opens the byte stream to t.
func (t Target) dial(ctx context.Context, mux usbmux.Address) (net.Conn, error) {
	switch t.Scheme {
	case "usb":
		return usbmux.DialDevice(ctx, mux, t.UDID, t.Port)
	case "adb":
		return adb.DialDevice(ctx, adb.DefaultAddress(), t.Serial, t.Port)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port))))
}
