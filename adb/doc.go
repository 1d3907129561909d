// Package adb is a client of the adb server, the host daemon (`adb
// start-server`, tcp:5037) that multiplexes streams to Android devices over
// USB or the network, speaking its host protocol directly.
//
// # Wire format
//
// A request is its length as four hexadecimal ASCII digits followed by the
// request in ASCII ("000chost:version"). The server answers OKAY, or FAIL
// followed by a length-prefixed message ("FAIL0014device 'x' not found").
// host:devices-l answers OKAY and one length-prefixed block of lines, one
// device a line: its serial, its state (device, offline, unauthorized, ...)
// and key:value fields (usb:1-1 product:... model:Pixel_8 device:...
// transport_id:1), separated by spaces. host:transport:SERIAL switches the
// connection to that device; the next request on the same connection is a
// service on the device: tcp:PORT makes the connection the raw byte stream
// to that TCP port on the device (the direct form of `adb forward`), and
// shell:COMMAND its output stream until the command exits.
//
// Sources: the protocol description in the Android platform's
// packages/modules/adb (OVERVIEW.TXT, SERVICES.TXT); this package is written
// from that description.
//
// # Server address
//
// DefaultAddress reads the variables adb itself reads:
// ANDROID_ADB_SERVER_ADDRESS (host, default 127.0.0.1) and
// ANDROID_ADB_SERVER_PORT (default 5037).
//
// # Limits
//
// Every call takes a context and is bounded by a deadline (DefaultTimeout
// when the context has none); a reply's announced length is at most four
// hex digits (64 KiB); a shell command's output is read up to MaxShellBytes.
package adb
