package devices

import (
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
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
	errgolden.Check(t, "profiles-ufs4-phone-12gb", c.Validate())
	c.SetFile("a fit candidate")
	errgolden.Check(t, "a-fit-candidate-memory", c.Validate())
	c.SetFile("")
	c.Name = "ufs4-phone-12gb-fitted"
	errgolden.Check(t, "ufs4-phone-12gb-fitted", c.Validate())
}
