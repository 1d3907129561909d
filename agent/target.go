package agent

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/lessim/lessim/usbmux"
)

// Target is where an agent listens: tcp://HOST:PORT, or usb://UDID:PORT
// (a TCP port on an iOS device reached through usbmuxd).
type Target struct {
	Scheme string // "tcp" or "usb"
	Host   string // tcp: host name or address
	UDID   string // usb: the device's UDID
	Port   uint16
}

// String renders t as it is written on the command line.
func (t Target) String() string {
	if t.Scheme == "usb" {
		return "usb://" + t.UDID + ":" + strconv.Itoa(int(t.Port))
	}
	return "tcp://" + net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port)))
}

// ParseTarget reads tcp://HOST:PORT or usb://UDID:PORT.
func ParseTarget(s string) (Target, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "tcp" && scheme != "usb") {
		return Target{}, fmt.Errorf("target %q: want tcp://HOST:PORT or usb://UDID:PORT", s)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return Target{}, fmt.Errorf("target %q: %v", s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return Target{}, fmt.Errorf("target %q: port %q is not 1-65535", s, port)
	}
	t := Target{Scheme: scheme, Port: uint16(p)}
	if host == "" {
		return Target{}, fmt.Errorf("target %q: no %s", s, map[string]string{"tcp": "host", "usb": "UDID"}[scheme])
	}
	if scheme == "usb" {
		for _, c := range host {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
				return Target{}, fmt.Errorf("target %q: a UDID is hex digits and dashes", s)
			}
		}
		t.UDID = host
	} else {
		t.Host = host
	}
	return t, nil
}

// dial opens the byte stream to t: a TCP connection, or a usbmuxd-relayed
// stream to the device's port.
func (t Target) dial(ctx context.Context, mux usbmux.Address) (net.Conn, error) {
	if t.Scheme == "usb" {
		return usbmux.DialDevice(ctx, mux, t.UDID, t.Port)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port))))
}
