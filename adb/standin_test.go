package adb

import (
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"

	"github.com/lessim/lessim/adb/adbtest"
)

// echoServer echoes each connection's bytes back (a stand-in device port).
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

// TestStandIn exercises the attached-device paths, which need a phone the
// real server here does not have, against the stand-in server: listing with
// model, the Android version, the direct device-port stream, a closed port,
// an unknown serial and an unauthorized device.
func TestStandIn(t *testing.T) {
	s, err := adbtest.Start(
		adbtest.Device{Serial: "R5CT10ABCDE", Model: "SM_S918B", Props: map[string]string{"ro.build.version.release": "14", "ro.build.version.sdk": "34"},
			Ports: map[uint16]string{7070: echoServer(t)}},
		adbtest.Device{Serial: "emulator-5554", State: "unauthorized", Model: "sdk_gphone64_arm64"},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	devs, err := Devices(ctx, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{
		{Serial: "R5CT10ABCDE", State: "device", Model: "SM_S918B", Product: "sm_s918b", Name: "sm_s918b", Connection: "usb:1-1", TransportID: "1"},
		{Serial: "emulator-5554", State: "unauthorized", Model: "sdk_gphone64_arm64", Product: "sdk_gphone64_arm64", Name: "sdk_gphone64_arm64", Connection: "usb:1-2", TransportID: "2"},
	}
	if !reflect.DeepEqual(devs, want) {
		t.Fatalf("devices\n%+v, want\n%+v", devs, want)
	}
	if v, err := ServerVersion(ctx, s.Addr()); err != nil || v != 41 {
		t.Errorf("server version %d, %v", v, err)
	}
	rel, sdk, err := AndroidVersion(ctx, s.Addr(), "R5CT10ABCDE")
	if err != nil || rel != "14" || sdk != 34 {
		t.Errorf("android version %q sdk %d, %v", rel, sdk, err)
	}

	c, err := DialDevice(ctx, s.Addr(), "R5CT10ABCDE", 7070)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello through adb")
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != string(msg) {
		t.Errorf("echo %q, %v", got, err)
	}
	c.Close()

	var f *Failure
	if _, err := DialDevice(ctx, s.Addr(), "R5CT10ABCDE", 7071); !errors.As(err, &f) || f.Request != "tcp:7071" {
		t.Errorf("closed device port: %v", err)
	}
	if _, err := DialDevice(ctx, s.Addr(), "nosuchserial", 7070); !errors.As(err, &f) || f.Request != "host:transport:nosuchserial" {
		t.Errorf("unknown serial: %v", err)
	}
	if _, err := DialDevice(ctx, s.Addr(), "emulator-5554", 7070); !errors.As(err, &f) {
		t.Errorf("unauthorized device: %v", err)
	}
	if _, err := DialDevice(ctx, s.Addr(), "two words", 7070); err == nil || errors.As(err, &f) {
		t.Errorf("a serial with a space reached the server: %v", err)
	}
	if s.Count("tcp") != 2 {
		t.Errorf("%d tcp: requests, want 2", s.Count("tcp"))
	}
}

// TestParseDevices: host:devices-l lines as real servers print them,
// including a device without permissions, whose state has a space and is
// followed by an explanation; a line with a serial and no state is an error.
func TestParseDevices(t *testing.T) {
	got, err := ParseDevices("0123456789ABCDEF       device usb:1-1 product:panther model:Pixel_7 device:panther transport_id:3\n" +
		"192.168.1.5:5555       offline transport_id:4\n" +
		"ZY22ABCDEF             no permissions (missing udev rules? user is in the plugdev group); see [http://developer.android.com/tools/device.html] usb:1-2 transport_id:5\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{
		{Serial: "0123456789ABCDEF", State: "device", Model: "Pixel_7", Product: "panther", Name: "panther", Connection: "usb:1-1", TransportID: "3"},
		{Serial: "192.168.1.5:5555", State: "offline", TransportID: "4"},
		{Serial: "ZY22ABCDEF", State: "no permissions", Connection: "usb:1-2", TransportID: "5"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	if d, err := ParseDevices(""); err != nil || d == nil || len(d) != 0 {
		t.Errorf("empty list: %#v, %v", d, err)
	}
	if _, err := ParseDevices("lonely\n"); !errors.Is(err, ErrProtocol) {
		t.Errorf("no state: %v", err)
	}
}

// TestNotAServer: something that is not an adb server at the address gives
// ErrProtocol, not a hang or a panic.
func TestNotAServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
			c.Close()
		}
	}()
	if _, err := Devices(context.Background(), ln.Addr().String()); !errors.Is(err, ErrProtocol) {
		t.Errorf("not adb: %v", err)
	}
}
