//go:build !unix

package atomicfile

import "os"

// tryLock takes no lock on this system (no flock): nil, so a writer holds
// none and RemoveStale removes nothing.
func tryLock(path string) *os.File { return nil }
