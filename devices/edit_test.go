package devices

import (
	"strings"
	"testing"
)

// TestSetFile: a clone keeps its base's file name in messages until told
// otherwise; a derived profile's problems then name the derived profile.
func TestSetFile(t *testing.T) {
	p, err := LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Clone()
	c.Memory.Efficiency.Set("7", "test: out of bounds")
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "profiles/ufs4-phone-12gb.yaml: memory.efficiency") {
		t.Fatalf("clone: %v", err)
	}
	c.SetFile("a fit candidate")
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "a fit candidate: memory.efficiency") {
		t.Fatalf("after SetFile: %v", err)
	}
	c.SetFile("")
	c.Name = "ufs4-phone-12gb-fitted"
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "ufs4-phone-12gb-fitted: memory.efficiency") {
		t.Fatalf("after SetFile(\"\"): %v", err)
	}
}
