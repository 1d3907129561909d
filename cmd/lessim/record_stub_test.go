//go:build !llamacpp

package main

import (
	"strings"
	"testing"
)

// Without llama.cpp, record --help shows the help (and says what the build
// lacks); record itself is one clear error whatever its flags.
func TestRecordStubHelp(t *testing.T) {
	for _, h := range []string{"--help", "-h"} {
		got := runCLI(t, t.TempDir(), "record", "--model", "x.gguf", h)
		if strings.HasPrefix(got, "lessim: ") || !strings.Contains(got, "Usage:") {
			t.Errorf("record %s: got %q, want the help", h, got)
		}
	}
	got := runCLI(t, t.TempDir(), "record", "--model", "x.gguf")
	if !strings.HasPrefix(got, "lessim: ") || !strings.Contains(got, "built without llama.cpp") {
		t.Errorf("record: got %q", got)
	}
}
