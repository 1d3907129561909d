package main

import (
	"fmt"
	"slices"
	"strings"
)

// outputFormats are the values of every output --format flag.
var outputFormats = []string{"json", "text"}

// checkFormat refuses an output --format other than text or json; every
// command with one calls it before doing any work.
func checkFormat(format string) error {
	if !slices.Contains(outputFormats, format) {
		return fmt.Errorf("unknown format %q (valid: %s)", format, strings.Join(outputFormats, ", "))
	}
	return nil
}
