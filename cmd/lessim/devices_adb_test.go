package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/lessim/lessim/adb"
	"github.com/lessim/lessim/adb/adbtest"
	"github.com/lessim/lessim/internal/errgolden"
)

// TestDevicesADB pins devices adb against a stand-in adb server listing a
// ready phone (its model and Android version shown) and an unauthorized one
// (no version asked).
func TestDevicesADB(t *testing.T) {
	s, err := adbtest.Start(
		adbtest.Device{Serial: "R5CT10ABCDE", Model: "SM_S918B", Props: map[string]string{"ro.build.version.release": "14", "ro.build.version.sdk": "34"}},
		adbtest.Device{Serial: "emulator-5554", State: "unauthorized", Model: "sdk_gphone64_arm64"},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Setenv("ANDROID_ADB_SERVER_ADDRESS", "127.0.0.1")
	t.Setenv("ANDROID_ADB_SERVER_PORT", strconv.Itoa(s.Port()))
	golden(t, "devices-adb", runCLI(t, "", "devices", "adb"))
	golden(t, "devices-adb-json", runCLI(t, "", "devices", "adb", "--format", "json"))
	if n := s.Count("shell"); n != 4 {
		t.Errorf("%d shell requests, want 4 (release and SDK of the one ready device, twice)", n)
	}
}

// TestDevicesADBRealServer: Debian's adb server with no device attached
// lists none and the command succeeds; no server is a clear error.
func TestDevicesADBRealServer(t *testing.T) {
	addr := adbtest.StartReal(t)
	t.Setenv("ANDROID_ADB_SERVER_ADDRESS", "127.0.0.1")
	t.Setenv("ANDROID_ADB_SERVER_PORT", strings.TrimPrefix(addr, "127.0.0.1:"))
	out, _, err := runCLIErr(t, t.TempDir(), "devices", "adb")
	if err != nil || out != "no devices (adb server at "+addr+")\n" {
		t.Errorf("no devices: %v %q", err, out)
	}
	out, _, err = runCLIErr(t, t.TempDir(), "devices", "adb", "--format", "json")
	var devs []adb.Listed
	if err != nil || json.Unmarshal([]byte(out), &devs) != nil || devs == nil || len(devs) != 0 {
		t.Errorf("no devices as JSON: %v %q", err, out)
	}

	port := strconv.Itoa(adbtest.FreePort(t))
	t.Setenv("ANDROID_ADB_SERVER_PORT", port)
	_, _, err = runCLIErr(t, t.TempDir(), "devices", "adb")
	errgolden.Check(t, "no-server", errAt(err, "127.0.0.1:"+port))
}
