package adb

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/lessim/lessim/adb/adbtest"
)

// TestRealServer: Debian's adb server with no device attached lists none,
// refuses an unknown serial with its own message, and answers host:version;
// a port with no server is ErrNoServer.
func TestRealServer(t *testing.T) {
	addr := adbtest.StartReal(t)
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

	none := "127.0.0.1:" + strconv.Itoa(adbtest.FreePort(t))
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
