package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// outputFormats are the values of every output --format flag.
var outputFormats = []string{"json", "text"}

// checkFormat refuses an output --format other than text or json.
func checkFormat(format string) error {
	if !slices.Contains(outputFormats, format) {
		return fmt.Errorf("unknown format %q (valid: %s)", format, strings.Join(outputFormats, ", "))
	}
	return nil
}

// printJSON writes v to w as indented JSON, as every --format json does.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
