//go:build linux

package throttle

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options says what to limit. A zero limit leaves that resource alone; at least
// one must be set.
type Options struct {
	File        string // a file on the device to throttle (the model); needed with ReadBPS
	ReadBPS     int64  // read bytes per second on File's disk; 0: no bandwidth limit
	MemoryBytes int64  // memory.limit_in_bytes (RAM plus page cache); 0: no memory limit
	PID         int    // the process to move in; 0 means this process
}

// UnavailableError says why phone-like constraints cannot be applied here.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string {
	return "phone-like constraints are not available here: " + e.Reason
}

func unavailable(format string, a ...any) error {
	return &UnavailableError{Reason: fmt.Sprintf(format, a...)}
}

// Root is where cgroup v1 hierarchies are mounted; tests may not change it.
const Root = "/sys/fs/cgroup"

// Throttle is an active set of limits. Close removes it.
type Throttle struct {
	opt    Options
	pid    int
	groups []group // created cgroups, in creation order
	device string  // "major:minor" of the throttled disk, "" without ReadBPS

	mu     sync.Mutex
	closed bool
	sigs   chan os.Signal
	stop   chan struct{}
}

// group is one created cgroup and the cgroup the process came from.
type group struct {
	controller string // "blkio" or "memory"
	dir        string // the new cgroup's folder
	from       string // the folder of the cgroup the process was in
}

var seq atomic.Int64

// Start applies the limits (see the package documentation). It fails with an
// *UnavailableError when this machine cannot do it, and with another error when
// applying them failed; either way nothing is left behind.
func Start(opt Options) (*Throttle, error) {
	if opt.ReadBPS < 0 || opt.MemoryBytes < 0 {
		return nil, fmt.Errorf("throttle: limits must not be negative (read %d B/s, memory %d B)", opt.ReadBPS, opt.MemoryBytes)
	}
	if opt.ReadBPS == 0 && opt.MemoryBytes == 0 {
		return nil, errors.New("throttle: no limit given (want a read bandwidth, a memory cap or both)")
	}
	if os.Geteuid() != 0 {
		return nil, unavailable("cgroups need root (running as uid %d)", os.Geteuid())
	}
	t := &Throttle{opt: opt, pid: opt.PID}
	if t.pid == 0 {
		t.pid = os.Getpid()
	}
	var controllers []string
	if opt.ReadBPS > 0 {
		dev, err := diskOf(opt.File)
		if err != nil {
			return nil, err
		}
		t.device = dev
		controllers = append(controllers, "blkio")
	}
	if opt.MemoryBytes > 0 {
		controllers = append(controllers, "memory")
	}
	for _, c := range controllers {
		if err := checkV1(c); err != nil {
			return nil, err
		}
	}
	sweep(controllers)
	t.sigs, t.stop = make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(t.sigs, syscall.SIGINT, syscall.SIGTERM)
	go t.watch()
	if err := t.apply(controllers); err != nil {
		if cerr := t.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return t, nil
}

// apply creates the cgroups, writes the limits and moves the process in.
func (t *Throttle) apply(controllers []string) error {
	n := seq.Add(1)
	for _, c := range controllers {
		from, err := cgroupOf(t.pid, c)
		if err != nil {
			return err
		}
		g := group{controller: c, from: filepath.Join(Root, c, from)}
		g.dir = filepath.Join(g.from, fmt.Sprintf("lessim-%d-%d", os.Getpid(), n))
		if err := t.create(g); err != nil {
			return err
		}
		switch c {
		case "blkio":
			err = write(filepath.Join(g.dir, "blkio.throttle.read_bps_device"), fmt.Sprintf("%s %d", t.device, t.opt.ReadBPS))
		case "memory":
			err = write(filepath.Join(g.dir, "memory.limit_in_bytes"), strconv.FormatInt(t.opt.MemoryBytes, 10))
		}
		if err != nil {
			return err
		}
		if err := write(filepath.Join(g.dir, "cgroup.procs"), strconv.Itoa(t.pid)); err != nil {
			return err
		}
	}
	return nil
}

// create makes g's folder and records it, unless a signal closed the throttle
// meanwhile.
func (t *Throttle) create(g group) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("throttle: interrupted")
	}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return fmt.Errorf("throttle: create cgroup: %w", err)
	}
	t.groups = append(t.groups, g)
	return nil
}

// Device is the "major:minor" of the throttled disk ("" without a read limit).
func (t *Throttle) Device() string { return t.device }

// Groups lists the folders of the cgroups the throttle created.
func (t *Throttle) Groups() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.groups))
	for i, g := range t.groups {
		out[i] = g.dir
	}
	return out
}

// Close moves the process back where it came from and removes the cgroups. It is
// safe to call more than once and from a signal.
func (t *Throttle) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	signal.Stop(t.sigs)
	close(t.stop)
	var errs []error
	for i := len(t.groups) - 1; i >= 0; i-- {
		if err := remove(t.groups[i]); err != nil {
			errs = append(errs, err)
		}
	}
	t.groups = nil
	return errors.Join(errs...)
}

// watch cleans up on SIGINT or SIGTERM and raises the signal again.
func (t *Throttle) watch() {
	select {
	case <-t.stop:
	case s := <-t.sigs:
		err := t.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "lessim: removing the throttle:", err)
		}
		signal.Reset(s)
		unix.Kill(os.Getpid(), s.(syscall.Signal))
	}
}

// remove moves every process left in g back to the cgroup it came from and
// removes g.
func remove(g group) error {
	procs, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("throttle: %w", err)
	}
	for _, p := range strings.Fields(string(procs)) {
		// NB: a process that exited in between makes this fail with ESRCH; that is fine.
		if err := write(filepath.Join(g.from, "cgroup.procs"), p); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	if err := unix.Rmdir(g.dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("throttle: remove cgroup %s: %w", g.dir, err)
	}
	return nil
}

// write writes one value to a cgroup file.
func write(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("throttle: %w", err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("throttle: write %q to %s: %w", value, path, err)
	}
	return nil
}

// checkV1 reports whether controller c is mounted as a cgroup v1 hierarchy at
// Root/c.
func checkV1(c string) error {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return unavailable("cannot read /proc/self/mounts: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 4 && fs[2] == "cgroup" && fs[1] == filepath.Join(Root, c) {
			for _, o := range strings.Split(fs[3], ",") {
				if o == c {
					return nil
				}
			}
		}
	}
	return unavailable("no cgroup v1 %s hierarchy is mounted at %s (cgroup v2 has no blkio.throttle files; this machine would need cgroup v1)", c, filepath.Join(Root, c))
}

// cgroupOf is pid's cgroup path in controller c's v1 hierarchy.
func cgroupOf(pid int, c string) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", fmt.Errorf("throttle: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, name := range strings.Split(parts[1], ",") {
			if name == c {
				return parts[2], nil
			}
		}
	}
	return "", unavailable("process %d is in no cgroup v1 %s hierarchy", pid, c)
}

// diskOf is the "major:minor" of the whole disk holding path's file system.
func diskOf(path string) (string, error) {
	if path == "" {
		return "", errors.New("throttle: a read bandwidth limit needs the model file (Options.File)")
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", fmt.Errorf("throttle: %w", &os.PathError{Op: "stat", Path: path, Err: err})
	}
	maj, mnr := unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev))
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", maj, mnr)
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return "", unavailable("%s is on device %d:%d, which is not a block device (tmpfs, overlay or a network file system): nothing to throttle", path, maj, mnr)
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		dev, err := os.ReadFile(filepath.Join(filepath.Dir(real), "dev"))
		if err != nil {
			return "", unavailable("%s is on partition %d:%d whose disk is unknown: %v", path, maj, mnr, err)
		}
		return strings.TrimSpace(string(dev)), nil
	}
	return fmt.Sprintf("%d:%d", maj, mnr), nil
}

// sweep removes empty lessim-<pid>-* cgroups left by processes that are gone
// (killed with SIGKILL, which nothing can catch). Errors are ignored: a
// leftover that cannot be removed now stays for the next run.
func sweep(controllers []string) {
	for _, c := range controllers {
		base := filepath.Join(Root, c)
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			var pid, n int
			if k, _ := fmt.Sscanf(d.Name(), "lessim-%d-%d", &pid, &n); k == 2 {
				if pid != os.Getpid() && unix.Kill(pid, 0) == unix.ESRCH {
					unix.Rmdir(p)
				}
				return filepath.SkipDir
			}
			return nil
		})
	}
}
