// Command lessim predicts how fast a Mixture-of-Experts model decodes on a
// memory-limited device whose expert weights stream from flash. See README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/lessim/lessim/internal/atomicfile"
)

// main installs the atomic-write signal handler and runs the command line.
// A SIGINT, SIGTERM or SIGHUP ends every command the same way: the files at
// the targets of writes in progress stay as they were (their temporaries
// and staging folders removed), "lessim: interrupted" is the last line on
// stderr and the process dies of the signal (status 130 for Ctrl-C, 143 for
// SIGTERM). A command that shuts down cleanly first (live, validate,
// calibrate: atomicfile.NotifyContext) sees the first signal as its
// context cancelled and returns; main then ends the process with that
// signal rather than report the cancellation as an error. run, used by the
// tests in-process, installs no handler.
func main() {
	releaseSignals = atomicfile.HandleSignals(func(sig os.Signal) {
		fmt.Fprintln(os.Stderr, "lessim:", interruptedText(sig))
	})
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if sig := atomicfile.Interrupted(); sig != nil {
		atomicfile.Exit(sig)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lessim:", err)
		os.Exit(1)
	}
}

// interruptedText says that a signal ended the command: "interrupted" for
// Ctrl-C, "interrupted (terminated)" for SIGTERM and so on.
func interruptedText(sig os.Signal) string {
	if sig == os.Interrupt {
		return "interrupted"
	}
	return "interrupted (" + sig.String() + ")"
}

// run executes one lessim command line; it is main without the process.
func run(args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	return root.Execute()
}

// releaseSignals uninstalls main's atomic-write signal handler, for a command
// that shuts down gracefully on SIGINT/SIGTERM itself (the agent: it cancels
// its run and closes its connections); such a command's writes must abort
// their temporaries on cancellation. A no-op outside main (tests).
var releaseSignals = func() {}
