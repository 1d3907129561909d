package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StaleAge is how long a leftover must be unchanged before RemoveStale
// takes it for a dead writer's.
const StaleAge = time.Minute

func tempPrefix(base string) string { return "." + base + ".tmp-" }

// RemoveStale removes from folder dir the temporaries and staging folders
// named prefix... (".NAME.tmp-" for a target NAME, ".part-" for a sweep's
// parts) whose writer is gone: unchanged for StaleAge and not locked. It
// returns how many it removed; one it cannot check or remove stays.
func RemoveStale(dir, prefix string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !strings.Contains(e.Name(), ".tmp-") || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < StaleAge || registered(p) {
			continue
		}
		if l := tryLock(p); l != nil {
			if os.RemoveAll(p) == nil {
				removed++
			}
			l.Close()
		}
	}
	return removed
}

func registered(p string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	_, ok := reg.live[p]
	return ok
}
