// Command lessim predicts how fast a Mixture-of-Experts model decodes on a
// memory-limited device whose expert weights stream from flash. See README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/lessim/lessim/internal/atomicfile"
)

// main installs the atomic-write signal handler (a SIGINT, SIGTERM or SIGHUP
// removes the temporaries of writes in progress, so the files at their
// targets stay as they were, then ends the process with that signal) and runs
// the command line. run, used by the tests in-process, installs no handler.
func main() {
	releaseSignals = atomicfile.HandleSignals()
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lessim:", err)
		os.Exit(1)
	}
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
