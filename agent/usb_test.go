package agent

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lessim/lessim/usbmux"
	"github.com/lessim/lessim/usbmux/usbmuxtest"
)

// TestUSBTarget: usb://UDID:PORT through a stand-in usbmuxd (which lists one
// device and relays its port 7070 to a real agent over TCP) gives the same
// result and stream as tcp:// to that agent: the USB path end to end, but
// for the cable and Apple's daemon.
func TestUSBTarget(t *testing.T) {
	a := startAgent(t, newTestEngine(t, 0), fastLimits())
	const udid = "00008130-001A2B3C4D5E6F70"
	d, err := usbmuxtest.Start(t.TempDir(), usbmuxtest.Device{ID: 3, UDID: udid, Ports: map[uint16]string{7070: strings.TrimPrefix(a.target, "tcp://")}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	o := Options{Usbmux: usbmux.ParseAddress(d.Address())}
	ctx := context.Background()

	run := func(target string) (*json.RawMessage, []TokenSample, DeviceFacts) {
		c, err := DialWith(ctx, target, a.token, o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var samples []TokenSample
		res, err := c.Run(ctx, json.RawMessage(testSpec), func(s TokenSample) error { samples = append(samples, s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		raw := json.RawMessage(b)
		return &raw, samples, c.Facts()
	}
	usbRes, usbSamples, usbFacts := run("usb://" + udid + ":7070")
	tcpRes, tcpSamples, tcpFacts := run(a.target)
	if string(*usbRes) != string(*tcpRes) {
		t.Fatalf("usb result differs from tcp:\n%s\n%s", *usbRes, *tcpRes)
	}
	if !reflect.DeepEqual(usbSamples, tcpSamples) || usbFacts != tcpFacts {
		t.Fatal("usb stream or facts differ from tcp")
	}
	if d.Count("Connect") != 1 {
		t.Errorf("%d Connect requests, want 1", d.Count("Connect"))
	}

	if _, err := DialWith(ctx, "usb://00008130-00000000000000FF:7070", a.token, o); !errors.Is(err, ErrUnreachable) || !errors.Is(err, usbmux.ErrNoDevice) {
		t.Errorf("unknown UDID: %v", err)
	}
	var re *usbmux.ResultError
	if _, err := DialWith(ctx, "usb://"+udid+":7071", a.token, o); !errors.Is(err, ErrUnreachable) || !errors.As(err, &re) || re.Number != usbmux.ResultConnRefused {
		t.Errorf("closed device port: %v", err)
	}
	if _, err := DialWith(ctx, "usb://"+udid+":7070", "0123456789abcdef0123456789abcdef", o); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong token over usb: %v", err)
	}
}
