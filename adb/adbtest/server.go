// Package adbtest is a stand-in adb server for tests: it serves the host
// protocol (4-hex-digit length + request; OKAY, or FAIL and a message) on a
// TCP port, lists the devices it is given (host:devices, host:devices-l),
// and on host:transport:SERIAL serves the device's services on the same
// connection: tcp:PORT relays the raw stream to a TCP address, the way adbd
// connects to a port on the phone, and shell:getprop NAME prints a property.
// It frames messages with its own code, independent of package adb.
package adbtest

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Device is one fake device.
type Device struct {
	Serial, State string // State "" means "device" (ready)
	Model         string // e.g. "Pixel_8"
	Props         map[string]string
	// Ports maps a device TCP port to the host address tcp:PORT relays to.
	Ports map[uint16]string
}

// Server is a running stand-in.
type Server struct {
	ln      net.Listener
	devices []Device
	mu      sync.Mutex
	conns   map[net.Conn]bool
	counts  map[string]int // requests by service name (before the first ':' argument)
	wg      sync.WaitGroup
}

// Start serves devices on a free loopback port.
func Start(devices ...Device) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, devices: devices, conns: map[net.Conn]bool{}, counts: map[string]int{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the server's HOST:PORT.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Port is the server's port (for ANDROID_ADB_SERVER_PORT).
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Count is how many requests for service (e.g. "host:transport", "tcp",
// "shell") the server has had.
func (s *Server) Count(service string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[service]
}

// Close stops the server and closes every connection.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

func readRequest(c net.Conn) (string, error) {
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return "", err
	}
	l, err := strconv.ParseUint(string(n[:]), 16, 16)
	if err != nil {
		return "", err
	}
	b := make([]byte, l)
	_, err = io.ReadFull(c, b)
	return string(b), err
}

func okay(c net.Conn)                { io.WriteString(c, "OKAY") }
func fail(c net.Conn, msg string)    { fmt.Fprintf(c, "FAIL%04x%s", len(msg), msg) }
func okayBlock(c net.Conn, b string) { fmt.Fprintf(c, "OKAY%04x%s", len(b), b) }
func (s *Server) count(service string) {
	s.mu.Lock()
	s.counts[service]++
	s.mu.Unlock()
}

// serve answers host requests until one switches the connection to a device.
func (s *Server) serve(c net.Conn) {
	for {
		req, err := readRequest(c)
		if err != nil {
			return
		}
		switch {
		case req == "host:version":
			s.count(req)
			okayBlock(c, fmt.Sprintf("%04x", 41))
			return
		case req == "host:devices" || req == "host:devices-l":
			s.count(req)
			var b strings.Builder
			for i, d := range s.devices {
				fmt.Fprintf(&b, "%-22s %s", d.Serial, state(d))
				if req == "host:devices-l" {
					fmt.Fprintf(&b, " usb:1-%d product:%s model:%s device:%s transport_id:%d", i+1, strings.ToLower(d.Model), d.Model, strings.ToLower(d.Model), i+1)
				}
				b.WriteString("\n")
			}
			okayBlock(c, b.String())
			return
		case strings.HasPrefix(req, "host:transport:"):
			s.count("host:transport")
			serial := strings.TrimPrefix(req, "host:transport:")
			for _, d := range s.devices {
				if d.Serial == serial {
					if state(d) != "device" {
						fail(c, "device '"+serial+"' is "+state(d))
						return
					}
					okay(c)
					s.device(c, d)
					return
				}
			}
			fail(c, "device '"+serial+"' not found")
			return
		default:
			fail(c, "unknown host service")
			return
		}
	}
}

func state(d Device) string {
	if d.State == "" {
		return "device"
	}
	return d.State
}

// device serves one service of d on c.
func (s *Server) device(c net.Conn, d Device) {
	req, err := readRequest(c)
	if err != nil {
		return
	}
	switch {
	case strings.HasPrefix(req, "tcp:"):
		s.count("tcp")
		p, err := strconv.ParseUint(strings.TrimPrefix(req, "tcp:"), 10, 16)
		addr, ok := d.Ports[uint16(p)]
		if err != nil || !ok {
			fail(c, "closed")
			return
		}
		dc, err := net.Dial("tcp", addr)
		if err != nil {
			fail(c, "closed")
			return
		}
		defer dc.Close()
		okay(c)
		done := make(chan struct{})
		go func() { io.Copy(dc, c); dc.(*net.TCPConn).CloseWrite(); close(done) }()
		io.Copy(c, dc)
		c.(*net.TCPConn).CloseWrite()
		<-done
	case strings.HasPrefix(req, "shell:getprop "):
		s.count("shell")
		okay(c)
		fmt.Fprintf(c, "%s\n", d.Props[strings.TrimPrefix(req, "shell:getprop ")])
	default:
		fail(c, "unknown device service")
	}
}
