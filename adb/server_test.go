package adb

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"testing"
)

// freePort is a loopback port nothing listens on (just now).
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer starts Debian's adb server on a free port of its own (not
// 5037, so a developer's server is left alone) and kills it when the test
// ends. It skips the test when adb is not installed.
func startServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("adb")
	if err != nil {
		t.Skip("adb is not installed (make test-adb installs Debian's adb): the real server is not tested")
	}
	port := strconv.Itoa(freePort(t))
	if out, err := exec.Command(bin, "-P", port, "start-server").CombinedOutput(); err != nil {
		t.Fatalf("adb -P %s start-server: %v\n%s", port, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(bin, "-P", port, "kill-server").CombinedOutput(); err != nil {
			t.Errorf("adb -P %s kill-server: %v\n%s", port, err, out)
		}
	})
	return "127.0.0.1:" + port
}

// TestRealServer: Debian's adb server with no device attached lists none,
// refuses an unknown serial with its own message, and answers host:version;
// a port with no server is ErrNoServer.
func TestRealServer(t *testing.T) {
	addr := startServer(t)
	ctx := context.Background()
	devs, err := Devices(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if devs == nil || len(devs) != 0 {
		t.Errorf("devices %+v, want an empty list", devs)
	}
	if v, err := ServerVersion(ctx, addr); err != nil || v < 31 {
		t.Errorf("server version %d, %v", v, err)
	}
	var f *Failure
	if _, err := DialDevice(ctx, addr, "0123456789ABCDEF", 7070); !errors.As(err, &f) || f.Request != "host:transport:0123456789ABCDEF" || f.Message == "" {
		t.Errorf("unknown serial: %v", err)
	}
	if _, _, err := AndroidVersion(ctx, addr, "0123456789ABCDEF"); !errors.As(err, &f) {
		t.Errorf("android version of an unknown serial: %v", err)
	}

	none := "127.0.0.1:" + strconv.Itoa(freePort(t))
	if _, err := Devices(ctx, none); !errors.Is(err, ErrNoServer) {
		t.Errorf("no server: %v", err)
	}
	if _, err := DialDevice(ctx, none, "0123456789ABCDEF", 7070); !errors.Is(err, ErrNoServer) {
		t.Errorf("no server: %v", err)
	}
}

// TestDefaultAddress: the variables adb reads.
func TestDefaultAddress(t *testing.T) {
	t.Setenv("ANDROID_ADB_SERVER_ADDRESS", "")
	t.Setenv("ANDROID_ADB_SERVER_PORT", "")
	if a := DefaultAddress(); a != "127.0.0.1:5037" {
		t.Errorf("default %s", a)
	}
	t.Setenv("ANDROID_ADB_SERVER_ADDRESS", "::1")
	t.Setenv("ANDROID_ADB_SERVER_PORT", "5038")
	if a := DefaultAddress(); a != "[::1]:5038" {
		t.Errorf("from the environment %s", a)
	}
}
