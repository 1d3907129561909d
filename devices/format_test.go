package devices

import (
	"strings"
	"testing"
)

// withFormats is the ufs4 phone profile's YAML with a
// memory.format_efficiency table of the given body inserted.
func withFormats(t *testing.T, body string) ([]byte, float64) {
	t.Helper()
	p, err := LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(y), "\nmemory:\n", "\nmemory:\n  format_efficiency:\n"+body, 1)
	if s == string(y) {
		t.Fatal("no memory section")
	}
	return []byte(strings.Replace(s, "name: ufs4-phone-12gb", "name: my-phone", 1)), d.MemEfficiency
}

// TestFormatEfficiencyProfile: a stated table resolves into
// Device.FormatEfficiency (an assumed entry is listed as assumed), and
// Efficiency falls back to memory.efficiency for a type it does not name;
// EquivalentBytes weighs each part by its type.
func TestFormatEfficiencyProfile(t *testing.T) {
	y, eff := withFormats(t, "    Q4_K: {value: 0.05, source: measured here}\n    MXFP4: {value: 0.025, source: 'assumed: half of Q4_K'}\n")
	p, err := ParseProfile(y, "my.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.FormatEfficiency) != 2 || d.Efficiency("Q4_K") != 0.05 || d.Efficiency("MXFP4") != 0.025 || d.Efficiency("Q8_0") != eff || d.Efficiency("") != eff {
		t.Errorf("efficiencies %v, memory.efficiency %v", d.FormatEfficiency, eff)
	}
	if !contains(d.Assumed, "memory.format_efficiency.MXFP4") || contains(d.Assumed, "memory.format_efficiency.Q4_K") {
		t.Errorf("assumed %v", d.Assumed)
	}
	if errs := d.Check(); len(errs) != 0 {
		t.Errorf("Check of a resolved device: %v", errs)
	}
	got := d.EquivalentBytes(1000, TypeBytes{"Q4_K", 100}, TypeBytes{"Q8_0", 200})
	if want := 100*eff/0.05 + 200 + 700; got != want {
		t.Errorf("EquivalentBytes %v, want %v", got, want)
	}
	var rows []string
	for _, r := range p.Rows() {
		rows = append(rows, r.Field)
	}
	if !contains(rows, "memory.format_efficiency.MXFP4") || !contains(rows, "memory.format_efficiency.Q4_K") {
		t.Errorf("rows %v", rows)
	}
	none := &Device{MemEfficiency: 0.3}
	if got := none.EquivalentBytes(1234, TypeBytes{"Q4_K", 100}); got != 1234 {
		t.Errorf("no table: EquivalentBytes %v, want the bytes", got)
	}
}

// TestFormatEfficiencyRefused: every bad entry is reported, by path.
func TestFormatEfficiencyRefused(t *testing.T) {
	y, _ := withFormats(t, "    q4_k: {value: 0.05, source: x}\n    Q9_K: {value: 0.05, source: x}\n    Q8_0: {value: 1.5, source: x}\n    Q3_K: {value: 0.05}\n    MXFP4: 0.05\n")
	_, err := ParseProfile(y, "my.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, path := range []string{"format_efficiency.q4_k", "format_efficiency.Q9_K", "format_efficiency.Q8_0", "format_efficiency.Q3_K", "format_efficiency.MXFP4"} {
		if !strings.Contains(err.Error(), "memory."+path+": ") {
			t.Errorf("no problem reported at memory.%s:\n%v", path, err)
		}
	}
	d := &Device{FormatEfficiency: map[QuantType]float64{"Q9_K": 0.5, "Q4_K": 0}}
	var ps problems
	d.checkFormatEfficiency(&ps)
	if len(ps) != 2 {
		t.Errorf("Check problems %q, want the unknown type and the zero", ps)
	}
}

// TestDenseTypesValidate: a spec's dense types and head type are checked.
func TestDenseTypesValidate(t *testing.T) {
	m, err := LookupModel(Qwen3_30BA3B, "")
	if err != nil {
		t.Fatal(err)
	}
	ok := *m
	ok.Layers = append([]LayerSpec(nil), m.Layers...)
	ok.Layers[0].DenseTypes = []TypeBytes{{"Q8_0", ok.Layers[0].DenseBytes / 2}, {"F32", 1000}}
	ok.HeadType = "Q6_K"
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid types refused: %v", err)
	}
	bad := ok
	bad.Layers = append([]LayerSpec(nil), ok.Layers...)
	bad.Layers[0].DenseTypes = []TypeBytes{{"Q9", 5}, {"Q8_0", bad.Layers[0].DenseBytes - 5}, {"Q8_0", 1}}
	bad.Layers[1].DenseTypes = []TypeBytes{{"F32", 0}}
	bad.HeadType = "Q7"
	err = bad.Validate()
	for _, want := range []string{"layers[0].dense_types[0].type", "layers[0].dense_types[2].type", "layers[0].dense_types:", "layers[1].dense_types[0].bytes", "head_type"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no problem at %s: %v", want, err)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
