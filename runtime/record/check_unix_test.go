//go:build unix

package record

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCheckModelNotRegular: a named pipe or a device is refused at once,
// naming the file and what it is; opening a pipe to parse it would block
// until something writes to it.
func TestCheckModelNotRegular(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "model.gguf")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("no named pipe here: %v", err)
	}
	for path, want := range map[string]string{
		pipe:        "model " + pipe + ": is a named pipe, not a regular file; want a GGUF file",
		"/dev/null": "model /dev/null: is a device, not a regular file; want a GGUF file",
	} {
		done := make(chan error, 1)
		go func() {
			mc, err := CheckModel(path)
			if err == nil {
				mc.File.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != want {
				t.Errorf("CheckModel(%s) = %v, want %q", path, err, want)
			}
		case <-time.After(time.Minute): // not a timing assertion: a blocked open never returns
			t.Fatalf("CheckModel(%s) blocked", path)
		}
	}
}
