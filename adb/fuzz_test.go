package adb

import (
	"errors"
	"io"
	"net"
	"testing"
)

// FuzzParseDevices: any host:devices-l reply parses to devices with a
// serial and a state, or an error, never a panic.
func FuzzParseDevices(f *testing.F) {
	f.Add("0123456789ABCDEF       device usb:1-1 product:panther model:Pixel_7 device:panther transport_id:3\n")
	f.Add("ZY22ABCDEF             no permissions (missing udev rules?); see [http://developer.android.com/tools/device.html] usb:1-2\n")
	f.Add("192.168.1.5:5555 offline\n\n")
	f.Add("lonely\n")
	f.Fuzz(func(t *testing.T, s string) {
		devs, err := ParseDevices(s)
		if err != nil {
			return
		}
		for _, d := range devs {
			if d.Serial == "" || d.State == "" {
				t.Fatalf("device without serial or state: %+v", d)
			}
		}
	})
}

// FuzzReply: any bytes from a server answer a request with OKAY, a
// *Failure, ErrProtocol or a read error, never a panic or a hang.
func FuzzReply(f *testing.F) {
	f.Add([]byte("OKAY0004002a"))
	f.Add([]byte("FAIL0019device 'x' not found"))
	f.Add([]byte("FAILzzzz"))
	f.Add([]byte("HTTP/1.1 400"))
	f.Add([]byte("OKAYffff"))
	f.Fuzz(func(t *testing.T, reply []byte) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			defer server.Close()
			var hdr [4]byte
			if _, err := io.ReadFull(server, hdr[:]); err != nil {
				return
			}
			io.CopyN(io.Discard, server, 12) // "host:version"
			server.Write(reply)
		}()
		c := &conn{nc: client}
		err := c.request("host:version")
		var fl *Failure
		if err == nil {
			_, err = c.block()
		}
		if err != nil && !errors.As(err, &fl) && !errors.Is(err, ErrProtocol) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}
