package agent

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Listen opens the agent's TCP listener on addr (HOST:PORT). Unless
// allowRemote is set, HOST must be a loopback address (or a name resolving
// only to loopback addresses): an agent runs the engine for whoever holds
// the token, so it is not exposed to a network by accident.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %v (want HOST:PORT, e.g. 127.0.0.1:7070)", addr, err)
	}
	if err := requireLoopback(host); err != nil && !allowRemote {
		return nil, fmt.Errorf("listen address %q: %v; pass --allow-remote to listen on a network", addr, err)
	}
	return net.Listen("tcp", addr)
}

func requireLoopback(host string) error {
	if host == "" {
		return fmt.Errorf("an empty host listens on every interface")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host) // an address is itself
	for _, ip := range ips {
		if !ip.IsLoopback() {
			if net.ParseIP(host) != nil {
				return fmt.Errorf("%s is not a loopback address", host)
			}
			return fmt.Errorf("%s resolves to %s, not a loopback address", host, ip)
		}
	}
	return err
}
