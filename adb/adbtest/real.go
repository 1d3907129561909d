package adbtest

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// StartReal runs the adb server installed here (Debian's adb) in the
// foreground (adb -P PORT nodaemon server) on a free loopback port of its
// own, not 5037, so that a developer's server is left alone; when the test
// ends it stops it with adb kill-server, killing the process if that does
// not end it within seconds, so no server outlives the test. It returns the
// server's HOST:PORT and skips the test when adb is not installed.
func StartReal(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("adb")
	if err != nil {
		t.Skip("adb is not installed (make test-adb installs Debian's adb): the real server is not tested")
	}
	port := strconv.Itoa(FreePort(t))
	addr := "127.0.0.1:" + port
	var logs bytes.Buffer
	srv := exec.Command(bin, "-P", port, "nodaemon", "server")
	srv.Stdout, srv.Stderr = &logs, &logs
	dieWithParent(srv)
	if err := srv.Start(); err != nil {
		t.Fatalf("adb -P %s nodaemon server: %v", port, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		exec.CommandContext(ctx, bin, "-P", port, "kill-server").Run()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			srv.Process.Kill()
			<-exited
			t.Logf("adb kill-server did not stop the server on port %s: killed it", port)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("adb -P %s nodaemon server exited: %v\n%s", port, err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("adb -P %s nodaemon server does not listen after 20 s", port)
		}
	}
}

// FreePort is a loopback port nothing listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
