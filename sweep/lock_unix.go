//go:build unix

package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// lockFolder takes dir's locks for a run of shard i of n and returns their
// release; another run that would write the same points is refused with
// ErrFolderBusy. NB: a run holds flock(2) locks on two hidden files for its
// whole length: .lessim-lock-of-N shared (runs of the N shards may share
// the folder) and .lessim-lock-I-of-N exclusive (one run per shard); and it
// refuses the folder while a run of another shard count holds its
// .lessim-lock-of-M, which it tests with an exclusive lock taken and
// released at once. Each run takes its own shared lock before testing the
// others', so of two runs starting together at least one sees the other.
// A file system that cannot lock is used unlocked (readers still refuse a
// point written twice).
func lockFolder(dir string, shard, shards int) (release func(), err error) {
	var held []*os.File
	release = func() {
		for _, f := range held {
			f.Close()
		}
	}
	// lock flocks the file name (how); it keeps the lock when keep is set
	// and it was taken. busy: another open file holds it.
	lock := func(name string, how int, keep bool) (busy bool, err error) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return false, fmt.Errorf("results folder: %w", err)
		}
		err = syscall.Flock(int(f.Fd()), how)
		if keep && err == nil {
			held = append(held, f)
		} else {
			f.Close()
		}
		return errors.Is(err, syscall.EWOULDBLOCK), nil
	}
	busy := func(what string) error {
		release()
		return fmt.Errorf("results folder %s: %w: %s is running into it; wait for it to finish (then rerun to resume) or use another --out", dir, ErrFolderBusy, what)
	}
	of := fmt.Sprintf(".lessim-lock-of-%d", shards)
	if _, err := lock(of, syscall.LOCK_SH, true); err != nil {
		return release, err
	}
	if b, err := lock(fmt.Sprintf(".lessim-lock-%d-of-%d", shard, shards), syscall.LOCK_EX|syscall.LOCK_NB, true); err != nil || b {
		if err != nil {
			return release, err
		}
		return release, busy(fmt.Sprintf("another sweep of shard %d/%d", shard, shards))
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		release()
		return release, fmt.Errorf("results folder: %w", err)
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, ".lessim-lock-of-") && n != of {
			if b, err := lock(n, syscall.LOCK_EX|syscall.LOCK_NB, false); err != nil || b {
				if err != nil {
					return release, err
				}
				return release, busy("a sweep of " + strings.TrimPrefix(n, ".lessim-lock-of-") + " shards")
			}
		}
	}
	return release, nil
}
