package adbtest

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
)

// StartReal starts the adb server installed here (Debian's adb) on a free
// loopback port of its own, not 5037, so that a developer's server is left
// alone, kills it when the test ends, and returns its HOST:PORT. It skips
// the test when adb is not installed.
func StartReal(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("adb")
	if err != nil {
		t.Skip("adb is not installed (make test-adb installs Debian's adb): the real server is not tested")
	}
	port := strconv.Itoa(FreePort(t))
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
