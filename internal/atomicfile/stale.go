package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StaleAge is how long a temporary must have been left unchanged before a
// later write takes it for the leftover of a writer that died without its
// handler running (SIGKILL, a power cut): see RemoveStale.
const StaleAge = time.Minute

// tempPrefix is the name prefix of the temporaries of target base (a file
// name or an output folder's name): ".BASE.tmp-".
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// RemoveStale removes from folder dir the temporaries and staging folders
// whose names start with prefix (".NAME.tmp-" for a target NAME; a sweep
// passes ".part-" for its parts') and whose writer is gone: unchanged for
// StaleAge and not locked. A writer holds an exclusive lock on each of its
// temporaries until they are committed or aborted, and the system drops
// the lock when the process dies, however it dies. It returns how many it
// removed. Errors are not reported: a leftover that cannot be checked or
// removed stays (on systems without file locks, every one stays).
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

// registered reports whether p is one of this process's live temporaries.
func registered(p string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	_, ok := reg.live[p]
	return ok
}
