package usbmux

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lessim/lessim/usbmux/usbmuxtest"
)

// echoServer echoes one connection's bytes back (a stand-in device port).
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// TestStandIn exercises the attached-device paths, which need a device the
// real daemon here does not have, against the stand-in daemon: listing,
// Attached and Detached events, Connect and the relayed stream, refused
// ports, UDID matching.
func TestStandIn(t *testing.T) {
	const udid = "00008130-001A2B3C4D5E6F70"
	d, err := usbmuxtest.Start(t.TempDir(), usbmuxtest.Device{ID: 7, UDID: udid, Ports: map[uint16]string{7070: echoServer(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := ParseAddress(d.Address())
	ctx := context.Background()

	devs, err := Devices(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].DeviceID != 7 || devs[0].UDID != udid || devs[0].ConnectionType != "USB" || devs[0].SpeedBitsPerS != 480000000 {
		t.Fatalf("devices %+v", devs)
	}

	lc, err := Dial(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if err := lc.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	ev, err := lc.Next(ctx)
	if err != nil || ev.Type != "Attached" || ev.Device == nil || ev.Device.UDID != udid {
		t.Fatalf("first event %+v %v", ev, err)
	}

	// The UDID matches without its dash and in upper case, as users type it.
	nc, err := DialDevice(ctx, a, "00008130001A2B3C4D5E6F70", 7070)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("through the relay")
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(nc, got); err != nil || string(got) != string(msg) {
		t.Fatalf("relayed %q %v", got, err)
	}
	nc.Close()

	var re *ResultError
	if _, err := DialDevice(ctx, a, udid, 7071); !errors.As(err, &re) || re.Number != ResultConnRefused {
		t.Fatalf("closed port: %v", err)
	}
	if d.Count("Connect") != 2 || d.Count("ListDevices") != 3 {
		t.Errorf("requests: %d connect, %d list", d.Count("Connect"), d.Count("ListDevices"))
	}

	d.Detach(7)
	ev, err = lc.Next(ctx)
	if err != nil || ev.Type != "Detached" || ev.DeviceID != 7 {
		t.Fatalf("detach event %+v %v", ev, err)
	}
	if _, err := DialDevice(ctx, a, udid, 7070); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("after detach: %v", err)
	}
}

// TestSwap16: the port goes in network byte order (62078 is lockdownd's
// port, 0xF27E, sent as 0x7EF2).
func TestSwap16(t *testing.T) {
	if got := swap16(62078); got != 0x7EF2 {
		t.Fatalf("swap16(62078) = %#x", got)
	}
}
