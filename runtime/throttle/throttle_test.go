//go:build linux

package throttle

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// diskFile is a file on a real disk.
func diskFile(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lessim-throttle-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// start is Start, skipping the test where constraints are unavailable.
func start(t testing.TB, opt Options) *Throttle {
	t.Helper()
	th, err := Start(opt)
	var ue *UnavailableError
	if errors.As(err, &ue) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func readCgroups(t testing.TB, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestStartClose(t *testing.T) {
	file := diskFile(t)
	before := readCgroups(t, os.Getpid())
	th := start(t, Options{File: file, ReadBPS: 200e6, MemoryBytes: 4 << 30})
	groups := th.Groups()
	if len(groups) != 2 {
		t.Fatalf("groups %v, want a blkio and a memory cgroup", groups)
	}
	now := readCgroups(t, os.Getpid())
	for _, g := range groups {
		if _, err := os.Stat(g); err != nil {
			t.Errorf("cgroup %s: %v", g, err)
		}
		if !strings.Contains(now, "/"+filepath.Base(g)+"\n") {
			t.Errorf("this process is not in %s:\n%s", g, now)
		}
	}
	bps, err := os.ReadFile(filepath.Join(groups[0], "blkio.throttle.read_bps_device"))
	if err != nil {
		t.Fatal(err)
	}
	if want := th.Device() + " 200000000"; strings.TrimSpace(string(bps)) != want {
		t.Errorf("read_bps_device = %q, want %q", bps, want)
	}
	limit, err := os.ReadFile(filepath.Join(groups[1], "memory.limit_in_bytes"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(limit)) != fmt.Sprint(4<<30) {
		t.Errorf("memory.limit_in_bytes = %q", limit)
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if _, err := os.Stat(g); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind (stat: %v)", g, err)
		}
	}
	if after := readCgroups(t, os.Getpid()); after != before {
		t.Errorf("cgroups after Close:\n%s\nwant as before:\n%s", after, before)
	}
	if err := th.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestUnavailableAndBadInput(t *testing.T) {
	if _, err := Start(Options{}); err == nil || !strings.Contains(err.Error(), "no limit") {
		t.Errorf("no limits: err = %v", err)
	}
	if _, err := Start(Options{ReadBPS: -1}); err == nil {
		t.Error("negative limit: no error")
	}
	if os.Geteuid() != 0 {
		_, err := Start(Options{MemoryBytes: 1 << 30})
		var ue *UnavailableError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "root") {
			t.Errorf("not root: err = %v, want an UnavailableError naming root", err)
		}
		return
	}
	shm, err := os.CreateTemp("/dev/shm", "lessim-throttle-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	shm.Close()
	defer os.Remove(shm.Name())
	_, err = Start(Options{File: shm.Name(), ReadBPS: 1e6})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a block device") {
		t.Errorf("file on tmpfs: err = %v, want an UnavailableError saying it has no block device", err)
	}
	if _, err := Start(Options{File: "/nonexistent/model.gguf", ReadBPS: 1e6}); err == nil || errors.As(err, &ue) {
		t.Errorf("missing file: err = %v, want a plain error", err)
	}
}

// TestSignalCleansUp runs a child that starts a throttle and waits; SIGTERM
// must end it and leave no cgroup behind.
func TestSignalCleansUp(t *testing.T) {
	if os.Getenv("LESSIM_THROTTLE_CHILD") != "" {
		return
	}
	file := diskFile(t)
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestChild$")
		cmd.Env = append(os.Environ(), "LESSIM_THROTTLE_CHILD="+file)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %v", err)
		}
		if strings.HasPrefix(line, "SKIP") {
			cmd.Wait()
			t.Skip(line)
		}
		groups := strings.Fields(line)
		for _, g := range groups {
			if _, err := os.Stat(g); err != nil {
				t.Fatalf("child's cgroup %s: %v", g, err)
			}
		}
		cmd.Process.Signal(sig)
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != sig {
			t.Errorf("child after %v: %v, want killed by the signal", sig, err)
		}
		for _, g := range groups {
			if _, err := os.Stat(g); !os.IsNotExist(err) {
				t.Errorf("%v: cgroup %s left behind (stat: %v)", sig, g, err)
			}
		}
	}
}

// TestChild is the child of TestSignalCleansUp.
func TestChild(t *testing.T) {
	file := os.Getenv("LESSIM_THROTTLE_CHILD")
	if file == "" {
		t.Skip("run by TestSignalCleansUp")
	}
	th, err := Start(Options{File: file, ReadBPS: 100e6, MemoryBytes: 2 << 30})
	if err != nil {
		fmt.Println("SKIP", err)
		return
	}
	fmt.Println(strings.Join(th.Groups(), " "))
	time.Sleep(time.Minute)
	t.Error("not killed")
}

// TestSweepRemovesLeftovers: an empty lessim cgroup of a process that is gone
// (as SIGKILL leaves it) is removed by the next Start.
func TestSweepRemovesLeftovers(t *testing.T) {
	file := diskFile(t)
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dead := cmd.Process.Pid // exited and reaped
	from, err := cgroupOf(os.Getpid(), "blkio")
	if err != nil {
		t.Skip(err)
	}
	stale := filepath.Join(Root, "blkio", from, fmt.Sprintf("lessim-%d-1", dead))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	th := start(t, Options{File: file, ReadBPS: 500e6})
	defer th.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		os.Remove(stale)
		t.Errorf("leftover %s not removed (stat: %v)", stale, err)
	}
}
