// Package usbmux is a client of usbmuxd, the daemon that multiplexes TCP-like
// connections to iOS devices over USB (Apple's on macOS, libimobiledevice's
// on Linux), speaking its plist protocol over the daemon's unix socket.
//
// # Wire format
//
// Every packet is a 16-byte header of four little-endian uint32s (total
// length including the header, protocol version = 1 for plist, message type
// = 8 for plist, tag) followed by an XML property list. A request is a
// dictionary with MessageType (ListDevices, Listen or Connect), the client's
// name and version, and the request's fields; the daemon echoes the tag in
// its reply. Replies are either a Result dictionary (Number: 0 ok, 1 bad
// command, 2 bad device, 3 connection refused, 6 bad version) or, for
// ListDevices, a dictionary with a DeviceList of {DeviceID, MessageType,
// Properties}. After Listen the daemon sends Attached (DeviceID,
// Properties), Detached (DeviceID) and Paired messages as devices come and
// go. After a successful Connect (DeviceID, PortNumber with the port's two
// bytes swapped, i.e. in network byte order) the socket stops carrying
// packets and becomes the raw byte stream to that TCP port on the device.
//
// Sources: libimobiledevice's libusbmuxd (include/usbmuxd-proto.h and
// src/libusbmuxd.c) describe the protocol; this package is written from
// that description, not from its code.
//
// # Limits
//
// Every call takes a context and is bounded by a deadline; a packet's
// announced length is checked against MaxPacketBytes before anything is
// allocated; undecodable plists are errors, never panics.
package usbmux
