package devices

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// TestAppLimit: memory.app_limit and memory.runtime resolve into the Device,
// survive a clone's YAML, are optional (absent: zero), and are refused above
// RAM or (runtime) without an app limit.
func TestAppLimit(t *testing.T) {
	p, err := ParseProfile(boundsProfile(nil), "b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	if d.AppLimitBytes != 12<<30 || d.RuntimeBytes != 200<<20 {
		t.Errorf("app limit %d, runtime %d", d.AppLimitBytes, d.RuntimeBytes)
	}
	y, err := p.Clone().YAML()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseProfile(y, "clone.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if e, _ := q.Device(); e.AppLimitBytes != d.AppLimitBytes || e.RuntimeBytes != d.RuntimeBytes {
		t.Errorf("clone: app limit %d, runtime %d", e.AppLimitBytes, e.RuntimeBytes)
	}
	for _, name := range ProfileNames() {
		if d, err := LoadDevice(name); err != nil || d.AppLimitBytes != 0 || d.RuntimeBytes != 0 {
			t.Errorf("%s: shipped profiles state no app limit (got %d, %v)", name, d.AppLimitBytes, err)
		}
	}
	noLimit := strings.Replace(string(boundsProfile(nil)), "  app_limit:", "  #app_limit:", 1)
	noLimit = strings.Replace(noLimit, "  growth:", "  #growth:", 1) // NB: refused alone too (TestPressureGrowth's field)
	_, err = ParseProfile([]byte(noLimit), "n.yaml")
	errgolden.Check(t, "n-yaml-memory-runtime", err)
	_, err = ParseProfile(boundsProfile(map[string]string{"memory.app_limit": "17 GiB"}), "r.yaml")
	errgolden.Check(t, "r-yaml-memory-app_limit", err)
}
