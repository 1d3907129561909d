package atomicfile

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// reg is the registry of live temporaries. Its lock is held while a
// temporary is created or renamed, so the signal handler sees each one
// either registered (and removes it) or gone.
var reg = struct {
	mu   sync.Mutex
	live map[string]struct{}
}{live: map[string]struct{}{}}

// handledSignals end the process; HandleSignals cleans up before they do.
var handledSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// HandleSignals installs the handler described in the package doc: on the
// first SIGINT, SIGTERM or SIGHUP it removes every live temporary and ends
// the process by re-raising the signal. lessim's main calls it once; stop
// uninstalls it (for tests).
func HandleSignals() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, handledSignals...)
	quit := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			die(sig)
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
		})
	}
}

// die removes the temporaries and ends the process with sig. NB: the
// registry lock is never released: a write racing with the signal blocks
// instead of creating or committing a file.
func die(sig os.Signal) {
	reg.mu.Lock()
	removeLive()
	s, _ := sig.(syscall.Signal)
	signal.Reset(sig)
	if s != 0 && raise(s) {
		time.Sleep(2 * time.Second) // the default action normally ends us first
	}
	os.Exit(128 + int(s))
}

// RemoveTemporaries removes every temporary of a write in progress (their
// Commit then fails). It is for a command's own signal handler; with
// HandleSignals installed it is not needed.
func RemoveTemporaries() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	removeLive()
}

func removeLive() {
	for name := range reg.live {
		os.Remove(name)
		delete(reg.live, name)
	}
}
