package calibrate

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeAtomic writes data to path through a temporary file in the same folder:
// write, sync, rename. The temporary file is removed on every error, and path
// is never left half-written.
func writeAtomic(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("calibrate: write %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("calibrate: sync %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return nil
}
