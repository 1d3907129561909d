//go:build !unix

package atomicfile

import "os"

// lock takes no lock on this system (no flock): nil.
func lock(path string) *os.File { return nil }

// tryLock cannot tell a live writer's temporary from a dead one's here:
// nil, so RemoveStale removes nothing.
func tryLock(path string) *os.File { return nil }
