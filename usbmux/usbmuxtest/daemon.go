// Package usbmuxtest is a stand-in usbmuxd for tests: it serves the
// documented wire format (16-byte little-endian header, XML plist bodies) on
// a unix socket, lists devices it is given, announces them to listeners, and
// answers Connect by relaying the raw stream to a TCP address, the way the
// real daemon relays to a port on the device. It encodes and decodes packets
// with its own code, independent of package usbmux.
package usbmuxtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"howett.net/plist"
)

// Device is one fake device.
type Device struct {
	ID   uint64
	UDID string
	// Ports maps a device TCP port to the host address Connect relays to.
	Ports map[uint16]string
}

// Daemon is a running stand-in.
type Daemon struct {
	Path string // the unix socket

	ln      net.Listener
	mu      sync.Mutex
	devices []Device
	subs    map[net.Conn]bool
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
	counts  map[string]int // requests by MessageType
}

// Start serves devices on a socket in dir.
func Start(dir string, devices ...Device) (*Daemon, error) {
	path := filepath.Join(dir, "usbmuxd.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	d := &Daemon{Path: path, ln: ln, devices: devices, subs: map[net.Conn]bool{}, conns: map[net.Conn]bool{}, counts: map[string]int{}}
	d.wg.Add(1)
	go d.accept()
	return d, nil
}

// Address is the daemon's address in USBMUXD_SOCKET_ADDRESS form.
func (d *Daemon) Address() string { return "UNIX:" + d.Path }

// Close stops the daemon, closes every connection and removes the socket.
func (d *Daemon) Close() error {
	err := d.ln.Close()
	d.mu.Lock()
	for c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
	os.Remove(d.Path)
	return err
}

// Count is how many requests of MessageType typ the daemon has served.
func (d *Daemon) Count(typ string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[typ]
}

// Detach removes a device and tells listeners.
func (d *Daemon) Detach(id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.devices[:0]
	for _, dev := range d.devices {
		if dev.ID != id {
			kept = append(kept, dev)
		}
	}
	d.devices = kept
	for c := range d.subs {
		writePacket(c, 0, map[string]any{"MessageType": "Detached", "DeviceID": id})
	}
}

func (d *Daemon) accept() {
	defer d.wg.Done()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		d.mu.Lock()
		d.conns[c] = true
		d.mu.Unlock()
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.serve(c)
		}()
	}
}

func (d *Daemon) forget(c net.Conn) {
	d.mu.Lock()
	delete(d.conns, c)
	delete(d.subs, c)
	d.mu.Unlock()
	c.Close()
}

func properties(dev Device) map[string]any {
	return map[string]any{"ConnectionType": "USB", "DeviceID": dev.ID, "SerialNumber": dev.UDID,
		"ProductID": uint64(0x12a8), "LocationID": uint64(0x1000 + dev.ID), "ConnectionSpeed": uint64(480000000)}
}

func (d *Daemon) serve(c net.Conn) {
	relayed := false
	defer func() {
		if !relayed {
			d.forget(c)
		}
	}()
	for {
		tag, req, err := readPacket(c)
		if err != nil {
			return
		}
		typ, _ := req["MessageType"].(string)
		d.mu.Lock()
		d.counts[typ]++
		d.mu.Unlock()
		switch typ {
		case "ListDevices":
			d.mu.Lock()
			list := []any{}
			for _, dev := range d.devices {
				list = append(list, map[string]any{"DeviceID": dev.ID, "MessageType": "Attached", "Properties": properties(dev)})
			}
			d.mu.Unlock()
			writePacket(c, tag, map[string]any{"DeviceList": list})
		case "Listen":
			d.mu.Lock()
			writePacket(c, tag, result(0))
			for _, dev := range d.devices {
				writePacket(c, 0, map[string]any{"MessageType": "Attached", "DeviceID": dev.ID, "Properties": properties(dev)})
			}
			d.subs[c] = true
			d.mu.Unlock()
		case "Connect":
			id, _ := req["DeviceID"].(uint64)
			pn, _ := req["PortNumber"].(uint64)
			port := uint16(pn>>8&0xff | pn<<8&0xff00) // network byte order on the wire
			addr, code := d.route(id, port)
			if code != 0 {
				writePacket(c, tag, result(code))
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				writePacket(c, tag, result(3))
				return
			}
			writePacket(c, tag, result(0))
			relayed = true
			d.relay(c, up)
			return
		default:
			writePacket(c, tag, result(1))
		}
	}
}

// route finds where a Connect goes: result 2 for an unknown device, 3 for a
// port nobody listens on.
func (d *Daemon) route(id uint64, port uint16) (string, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dev := range d.devices {
		if dev.ID == id {
			if a, ok := dev.Ports[port]; ok {
				return a, 0
			}
			return "", 3
		}
	}
	return "", 2
}

// relay copies both ways until either side closes.
func (d *Daemon) relay(c, up net.Conn) {
	d.mu.Lock()
	d.conns[up] = true
	d.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	go cp(up, c)
	go cp(c, up)
	wg.Wait()
	d.forget(c)
	d.forget(up)
}

func result(n uint64) map[string]any { return map[string]any{"MessageType": "Result", "Number": n} }

// readPacket reads one header and plist body (its own decoder).
func readPacket(r io.Reader) (uint32, map[string]any, error) {
	var h [16]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[0:])
	if binary.LittleEndian.Uint32(h[4:]) != 1 || binary.LittleEndian.Uint32(h[8:]) != 8 || n < 16 || n > 1<<20 {
		return 0, nil, errors.New("not a plist packet")
	}
	body := make([]byte, n-16)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	var m map[string]any
	if _, err := plist.Unmarshal(body, &m); err != nil {
		return 0, nil, fmt.Errorf("bad plist: %w", err)
	}
	return binary.LittleEndian.Uint32(h[12:]), m, nil
}

func writePacket(w io.Writer, tag uint32, v any) error {
	body, err := plist.Marshal(v, plist.XMLFormat)
	if err != nil {
		return err
	}
	b := make([]byte, 16+len(body))
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], 1)
	binary.LittleEndian.PutUint32(b[8:], 8)
	binary.LittleEndian.PutUint32(b[12:], tag)
	copy(b[16:], body)
	_, err = w.Write(b)
	return err
}
