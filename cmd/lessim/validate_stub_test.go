//go:build !(llamacpp && linux)

package main

import (
	"strings"
	"testing"
)

// Without llama.cpp, validate is one clear error whatever its flags.
func TestValidateNeedsLlama(t *testing.T) {
	got := runCLI(t, t.TempDir(), "validate", "--model", "x.gguf", "--out", "v")
	if !strings.HasPrefix(got, "lessim: ") || !strings.Contains(got, "built without llama.cpp") || strings.Count(got, "\n") != 1 {
		t.Errorf("got %q", got)
	}
}
