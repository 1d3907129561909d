//go:build unix

package usbmux

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/errgolden"
)

// realDaemon makes the real usbmuxd serve DefaultSocket for the test:
// installs Debian's usbmuxd when missing (as root), reuses a daemon already
// running (and leaves it running), else starts one in the foreground and, at
// cleanup, stops it and removes the socket and pid files it leaves behind.
// A file lock keeps concurrent test processes from stopping each other's
// daemon. Skips, saying why, when none of this is possible here.
func realDaemon(t *testing.T) Address {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: not starting usbmuxd")
	}
	lock, err := os.OpenFile(os.TempDir()+"/lessim-usbmuxd-test.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Skipf("usbmuxd lock: %v", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		t.Skipf("usbmuxd lock: %v", err)
	}
	t.Cleanup(func() { syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); lock.Close() })

	a := Address{"unix", DefaultSocket}
	if reachable(a) {
		t.Logf("using the usbmuxd already serving %s (left running)", DefaultSocket)
		return a
	}
	bin, err := exec.LookPath("usbmuxd")
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skip("usbmuxd is not installed and installing needs root (apt-get install usbmuxd)")
		}
		if out, err := exec.Command("apt-get", "install", "-y", "usbmuxd").CombinedOutput(); err != nil {
			t.Skipf("usbmuxd is not installed and apt-get install -y usbmuxd failed: %v\n%s", err, tail(out))
		}
		if bin, err = exec.LookPath("usbmuxd"); err != nil {
			t.Skip("usbmuxd still not found after installing")
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("starting usbmuxd on " + DefaultSocket + " needs root")
	}
	// Debian's usbmuxd 1.1.1 has no option for the socket path: it always
	// serves DefaultSocket. A socket file nobody answers on is a leftover of
	// a killed daemon.
	os.Remove(DefaultSocket)
	cmd := exec.Command(bin, "-f", "-v", "-U", "root")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Skipf("starting usbmuxd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		os.Remove(DefaultSocket)
		os.Remove(strings.TrimSuffix(DefaultSocket, "/usbmuxd") + "/usbmuxd.pid")
		t.Logf("usbmuxd log:\n%s", log.String())
	})
	deadline := time.Now().Add(10 * time.Second)
	for !reachable(a) {
		select {
		case err := <-exited:
			t.Skipf("usbmuxd exited at start (%v):\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("usbmuxd did not serve %s within 10 s:\n%s", DefaultSocket, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return a
}

func reachable(a Address) bool {
	c, err := net.DialTimeout(a.Network, a.Addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// TestRealDaemon runs the client against Debian's usbmuxd: handshake and
// device listing (compared with libimobiledevice's idevice_id when it
// installs), Listen, and the error paths.
func TestRealDaemon(t *testing.T) {
	a := realDaemon(t)
	ctx := context.Background()

	t.Run("list devices", func(t *testing.T) {
		devs, err := Devices(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		var ours []string
		for _, d := range devs {
			ours = append(ours, d.UDID)
		}
		t.Logf("usbmuxd lists %d device(s): %v", len(devs), ours)
		theirs, ok := ideviceIDs(t)
		if !ok {
			return
		}
		slices.Sort(ours)
		slices.Sort(theirs)
		if !slices.EqualFunc(ours, theirs, SameUDID) {
			t.Errorf("we list %v, idevice_id -l lists %v", ours, theirs)
		}
	})

	t.Run("listen", func(t *testing.T) {
		c, err := Dial(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Listen(ctx); err != nil {
			t.Fatal(err)
		}
		devs, _ := Devices(ctx, a)
		// The daemon first announces every attached device, then waits.
		for range devs {
			ev, err := c.Next(ctx)
			if err != nil || ev.Type != "Attached" {
				t.Fatalf("%+v %v", ev, err)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		ev, err := c.Next(wctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("with no device attached or detached: %+v %v", ev, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Next ignored its deadline: %v", d)
		}
	})

	t.Run("connect to a nonexistent device", func(t *testing.T) {
		c, err := Dial(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Connect(ctx, 4242, 7070)
		var re *ResultError
		if !errors.As(err, &re) || re.Number != ResultBadDevice {
			t.Fatalf("%v, want result %d", err, ResultBadDevice)
		}
	})

	t.Run("dial an unknown UDID", func(t *testing.T) {
		_, err := DialDevice(ctx, a, "00008130-00DEADBEEF000000", 7070)
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("%v, want ErrNoDevice", err)
		}
	})

	t.Run("unknown request", func(t *testing.T) {
		c, err := Dial(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rep, err := c.exchange(ctx, request{MessageType: "Frobnicate"})
		if err != nil {
			t.Fatal(err)
		}
		var re *ResultError
		if err := result("Frobnicate", rep); !errors.As(err, &re) || re.Number != ResultBadCommand {
			t.Fatalf("%v, want result %d", err, ResultBadCommand)
		}
	})
}

// ideviceIDs runs libimobiledevice's idevice_id -l (installing
// libimobiledevice-utils when missing and root); ok is false when it cannot.
func ideviceIDs(t *testing.T) ([]string, bool) {
	bin, err := exec.LookPath("idevice_id")
	if err != nil && os.Geteuid() == 0 {
		exec.Command("apt-get", "install", "-y", "libimobiledevice-utils").Run()
		bin, err = exec.LookPath("idevice_id")
	}
	if err != nil {
		t.Log("idevice_id (libimobiledevice-utils) not available: listing not cross-checked")
		return nil, false
	}
	cmd := exec.Command(bin, "-l")
	cmd.Env = append(os.Environ(), "USBMUXD_SOCKET_ADDRESS=")
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("idevice_id -l: %v", err)
		return nil, false
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	t.Logf("idevice_id -l lists %d device(s)", len(ids))
	return ids, true
}

// TestUnreachableDaemon: no daemon gives a clear error quickly.
func TestUnreachableDaemon(t *testing.T) {
	_, err := Devices(context.Background(), Address{"unix", t.TempDir() + "/none"})
	errgolden.Check(t, "is-usbmuxd-running", err)
}
