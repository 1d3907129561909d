package devices

import (
	"strings"
	"testing"
)

// withPassScale is the ufs4 phone profile's YAML with a compute.pass_scale
// table of the given body inserted.
func withPassScale(t *testing.T, body string) []byte {
	t.Helper()
	y, _ := withFormats(t, "")
	s := strings.Replace(string(y), "\ncompute:\n", "\ncompute:\n  pass_scale:\n"+body, 1)
	if s == string(y) {
		t.Fatal("no compute section")
	}
	return []byte(s)
}

// TestPassScale: a stated curve resolves into Device.PassScaleByTokens (an
// assumed entry listed as assumed, rows in token order), and PassScale
// interpolates it by hand: 1 at one token, linear between counts, flat past
// the last.
func TestPassScale(t *testing.T) {
	p, err := ParseProfile(withPassScale(t, "    \"8\": {value: 1.4, source: 'assumed: test'}\n    \"2\": {value: 1.1, source: measured}\n"), "my.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]float64{0: 1, 1: 1, 2: 1.1, 5: 1.1 + 0.3*3/6, 8: 1.4, 100: 1.4} {
		if got := d.PassScale(n); got != want {
			t.Errorf("PassScale(%d) = %v, want %v", n, got, want)
		}
	}
	if !contains(d.Assumed, "compute.pass_scale.8") || contains(d.Assumed, "compute.pass_scale.2") {
		t.Errorf("assumed %v", d.Assumed)
	}
	if errs := d.Check(); len(errs) != 0 {
		t.Errorf("Check of a resolved device: %v", errs)
	}
	var rows []string
	for _, r := range p.Rows() {
		if strings.HasPrefix(r.Field, "compute.") {
			rows = append(rows, r.Field)
		}
	}
	if len(rows) < 3 || rows[1] != "compute.pass_scale.2" || rows[2] != "compute.pass_scale.8" {
		t.Errorf("compute rows %v", rows)
	}
	if (&Device{}).PassScale(4) != 1 {
		t.Error("no table: PassScale is not 1")
	}
}

// TestPassScaleRefused: every bad entry is reported, by path.
func TestPassScaleRefused(t *testing.T) {
	_, err := ParseProfile(withPassScale(t, "    \"1\": {value: 1, source: x}\n    \"02\": {value: 1, source: x}\n    four: {value: 1, source: x}\n    \"4\": {value: 9, source: x}\n    \"8\": {value: 1.2}\n"), "my.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, k := range []string{"1", "02", "four", "4", "8"} {
		if !strings.Contains(err.Error(), "compute.pass_scale."+k+": ") {
			t.Errorf("no problem reported at compute.pass_scale.%s:\n%v", k, err)
		}
	}
	d := &Device{PassScaleByTokens: map[int]float64{1: 1, 4: 0}}
	var ps problems
	d.checkPassScale(&ps)
	if len(ps) != 2 {
		t.Errorf("Check problems %q, want the count and the zero", ps)
	}
}
