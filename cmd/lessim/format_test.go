package main

import (
	"strings"
	"testing"
)

// TestUnknownFormatRefused checks that every command with an output --format
// refuses a value other than text or json the same way, before doing any
// work (the file arguments here do not exist).
func TestUnknownFormatRefused(t *testing.T) {
	for _, args := range [][]string{
		{"models", "show", "qwen3-30b-a3b"},
		{"model", "inspect", "missing.gguf"},
		{"trace", "stats", "missing.parquet"},
		{"simulate", "--tokens", "5"},
		{"ablate", "--tokens", "5"},
		{"live", "--model", "missing.gguf"},
		{"devices", "usb"},
	} {
		for _, format := range []string{"xml", ""} {
			want := `lessim: unknown format "` + format + `" (valid: json, text)` + "\n"
			got := runCLI(t, "", append(args, "--format", format)...)
			if got != want {
				first, _, _ := strings.Cut(got, "\n")
				t.Errorf("%v --format %q: got %q..., want %q", args, format, first, want)
			}
		}
	}
}
