// Package atomictest holds test helpers for atomic writes: a small file
// system that fills up (a real full disk) and checks that a folder holds no
// leftover temporary.
package atomictest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes (e.g. "1m") in a fresh folder and
// unmounts it at the end of the test. It skips the test, saying why, unless
// the process runs as root and mount(8) is available and works.
func SmallFS(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("full-disk variant needs root to mount a small tmpfs; the failing-writer variant covers the logic")
	}
	mount, err := exec.LookPath("mount")
	if err != nil {
		t.Skip("full-disk variant needs mount(8) to mount a small tmpfs: ", err)
	}
	dir, err := os.MkdirTemp("", "atomictest-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mount, "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("full-disk variant: mount -t tmpfs failed (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			return
		}
		os.Remove(dir)
	})
	return dir
}

// NoTemporaries fails the test if dir holds a leftover temporary
// (".NAME.tmp-*", the pattern atomicfile uses).
func NoTemporaries(t testing.TB, dir string) {
	t.Helper()
	left := Temporaries(t, dir)
	if len(left) > 0 {
		t.Errorf("temporaries left in %s: %v", dir, left)
	}
}

// Temporaries lists the atomicfile temporaries in dir.
func Temporaries(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			left = append(left, filepath.Join(dir, e.Name()))
		}
	}
	return left
}
