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

// handler is the state of the installed handler: what it says before the
// process ends, the context a command asked the first signal to cancel
// (NotifyContext) and the signal that cancelled it.
var handler struct {
	mu     sync.Mutex
	notice func(os.Signal)
	cancel context.CancelFunc
	got    os.Signal
}

// HandleSignals installs the handler described in the package doc: a
// SIGINT, SIGTERM or SIGHUP cancels the context of a command that asked
// for it (NotifyContext) if it is the first signal; otherwise it removes
// every live temporary and staging folder, calls notice (if not nil, to
// say so) and ends the process by re-raising the signal. lessim's main
// calls it once; stop uninstalls it (for tests).
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

// interrupt cancels the command's context if sig is the first signal and
// a command asked for it, and reports whether it did.
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

// NotifyContext returns a copy of parent that the first SIGINT, SIGTERM or
// SIGHUP cancels, instead of ending the process, for a command that shuts
// down cleanly on its own (closing an engine or a connection, aborting its
// writes) once its context is done. Once the command has returned, its
// caller ends the process with Exit(Interrupted()); a second signal ends
// it at once. stop cancels the context and hands signals back to the
// handler's default. One command at a time may hold such a context;
// without HandleSignals nothing cancels it but stop.
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

// Exit ends the process as the handler does for sig: it removes every live
// temporary and staging folder, calls the handler's notice and re-raises
// sig (exit status 128 + sig where a signal cannot be raised).
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

// removeLive removes the registered temporaries and staging folders. The
// caller holds reg.mu.
func removeLive() {
	for name := range reg.live {
		os.RemoveAll(name)
		delete(reg.live, name)
	}
}
