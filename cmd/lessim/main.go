// Command lessim predicts how fast a Mixture-of-Experts model decodes on a
// memory-limited device whose expert weights stream from flash. See README.md.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
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
