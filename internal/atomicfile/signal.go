package atomicfile

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// reg is the registry of live temporaries and staging folders. Its lock is
// held while one is created, renamed or moved, so the signal handler sees
// each one either registered (and removes it) or gone.
var reg = struct {
	mu   sync.Mutex
	live map[string]struct{}
}{live: map[string]struct{}{}}

// handledSignals end the process; HandleSignals cleans up before they do.
var handledSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// handler is the installed handler's notice, the context the first signal
// cancels (NotifyContext) and the signal that did.
var handler struct {
	mu     sync.Mutex
	notice func(os.Signal)
	cancel context.CancelFunc
	got    os.Signal
}

// HandleSignals installs the handler described in the package doc, which
// calls notice (if not nil) before it ends the process; stop uninstalls it.
func HandleSignals(notice func(os.Signal)) (stop func()) {
	handler.mu.Lock()
	handler.notice = notice
	handler.mu.Unlock()
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, handledSignals...)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				if !interrupt(sig) {
					die(sig)
				}
			case <-quit:
				return
			}
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

// interrupt cancels a NotifyContext context on the first signal.
func interrupt(sig os.Signal) bool {
	handler.mu.Lock()
	defer handler.mu.Unlock()
	if handler.cancel == nil || handler.got != nil {
		return false
	}
	handler.got = sig
	handler.cancel()
	return true
}

// NotifyContext returns a copy of parent that the first handled signal
// cancels instead of ending the process, for a command that shuts down
// cleanly on its own; its caller then ends the process with
// Exit(Interrupted()). stop cancels it and hands signals back to the
// handler. One command at a time may hold such a context.
func NotifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	handler.mu.Lock()
	handler.cancel = cancel
	handler.mu.Unlock()
	return ctx, func() {
		handler.mu.Lock()
		handler.cancel = nil
		handler.mu.Unlock()
		cancel()
	}
}

// Interrupted returns the signal that cancelled a NotifyContext context,
// or nil if none did.
func Interrupted() os.Signal {
	handler.mu.Lock()
	defer handler.mu.Unlock()
	return handler.got
}

// Exit ends the process as the handler does for sig.
func Exit(sig os.Signal) { die(sig) }

// die removes the temporaries and ends the process with sig. NB: the
// registry lock is never released: a write racing with the signal blocks
// instead of creating or committing a file.
func die(sig os.Signal) {
	reg.mu.Lock()
	removeLive()
	handler.mu.Lock()
	notice := handler.notice
	handler.mu.Unlock()
	if notice != nil {
		notice(sig)
	}
	s, _ := sig.(syscall.Signal)
	signal.Reset(sig)
	if s != 0 && raise(s) {
		time.Sleep(2 * time.Second) // the default action normally ends us first
	}
	os.Exit(128 + int(s))
}

// removeLive removes the registered temporaries; the caller holds reg.mu.
func removeLive() {
	for name := range reg.live {
		os.RemoveAll(name)
		delete(reg.live, name)
	}
}
