package devices

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files under testdata/")

// TestEmbeddedProfiles checks every built-in profile: it validates, resolves,
// names itself after its file, explains how to calibrate, and every number has
// a source.
func TestEmbeddedProfiles(t *testing.T) {
	names := ProfileNames()
	want := []string{"ipad-pro-m4", "iphone-17-pro-max", "iphone-18-pro-max", "ufs4-phone-12gb"}
	if !slices.Equal(names, want) {
		t.Fatalf("ProfileNames() = %v, want %v", names, want)
	}
	for _, name := range names {
		p, err := LoadProfile(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Name != name {
			t.Errorf("%s: name field is %q", name, p.Name)
		}
		if strings.TrimSpace(p.Description) == "" || !strings.Contains(p.Calibration, "--device-file") {
			t.Errorf("%s: want a description and a calibration note mentioning --device-file", name)
		}
		rows := p.Rows()
		if len(rows) < 13 {
			t.Errorf("%s: only %d rows", name, len(rows))
		}
		var assumed []string
		for _, r := range rows {
			if strings.TrimSpace(r.Value) == "" || strings.TrimSpace(r.Source) == "" {
				t.Errorf("%s: %s has value %q, source %q", name, r.Field, r.Value, r.Source)
			}
			if IsAssumed(r.Source) {
				f, _, _ := strings.Cut(r.Field, "[")
				if !slices.Contains(assumed, f) {
					assumed = append(assumed, f)
				}
			}
		}
		d, err := p.Device()
		if err != nil {
			t.Errorf("%s: Device: %v", name, err)
			continue
		}
		if !slices.Equal(d.Assumed, assumed) {
			t.Errorf("%s: Device.Assumed = %v, want %v", name, d.Assumed, assumed)
		}
		if d.RAMBytes <= d.ReserveBytes || d.MemBandwidth <= 0 || d.MemEfficiency <= 0 || d.MemEfficiency > 1 ||
			d.ComputeFLOPS <= 0 || d.Flash.Lanes < 1 || d.Flash.PageBytes <= 0 || len(d.Flash.SingleLane) == 0 || len(d.Flash.Aggregate) == 0 {
			t.Errorf("%s: implausible device %+v", name, d)
		}
	}
}

// TestAppleFlashAssumed pins the DESIGN.md rule: no public iPhone NAND
// figures exist, so every iPhone flash number except the iOS page size must be
// marked assumed.
func TestAppleFlashAssumed(t *testing.T) {
	for _, name := range []string{"iphone-17-pro-max", "iphone-18-pro-max"} {
		p, err := LoadProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Rows() {
			if strings.HasPrefix(r.Field, "flash.") && r.Field != "flash.page_size" && !IsAssumed(r.Source) {
				t.Errorf("%s: %s cites %q, but no public iPhone NAND figures exist", name, r.Field, r.Source)
			}
		}
	}
}

// TestDecodePlausible checks the numbers each profile's comment works out:
// the reference model at Q4_K_M all in RAM decodes memory-bound at a
// plausible speed. Per token: bytes / (bandwidth × efficiency) against
// FLOPs / FLOPS, plus the per-layer overhead.
func TestDecodePlausible(t *testing.T) {
	m, err := LookupModel(MiniCPMV47, "q4_k_m")
	if err != nil {
		t.Fatal(err)
	}
	bytes, flops := float64(m.HeadBytes), float64(m.HeadFLOPsPerToken)
	for _, l := range m.Layers {
		bytes += float64(l.DenseBytes) + float64(m.TopK)*float64(l.ExpertBytes)
		flops += float64(l.DenseFLOPsPerToken) + float64(m.TopK)*float64(l.ExpertFLOPsPerToken)
	}
	for _, tc := range []struct {
		name     string
		min, max float64 // tok/s stated in the profile comment, ±1
	}{
		{"ufs4-phone-12gb", 16, 18},
		{"iphone-17-pro-max", 25, 27},
		{"iphone-18-pro-max", 28, 30},
		{"ipad-pro-m4", 39, 41},
	} {
		d, err := LoadDevice(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		mem := bytes / (d.MemBandwidth * d.MemEfficiency)
		comp := flops / d.ComputeFLOPS
		if comp >= mem {
			t.Errorf("%s: compute %.1f ms >= memory %.1f ms: decode should be memory-bound", tc.name, comp*1e3, mem*1e3)
		}
		tps := 1 / (max(mem, comp) + float64(len(m.Layers))*float64(d.LayerOverhead)/1e9)
		if tps < tc.min || tps > tc.max {
			t.Errorf("%s: %.1f tok/s all in RAM, the profile comment says %v–%v", tc.name, tps, tc.min, tc.max)
		}
	}
}

func TestLoadProfileUnknown(t *testing.T) {
	_, err := LoadProfile("iphone-99")
	if err == nil {
		t.Fatal("want an error")
	}
	for _, n := range ProfileNames() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %s", err, n)
		}
	}
}

// TestInvalidProfiles runs every testdata/invalid/*.yaml through ParseProfile
// and compares the error with the golden .err file beside it (-rewrite
// regenerates them; read the diff before committing).
func TestInvalidProfiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := ParseProfileFile(f)
			if err == nil {
				t.Fatal("parsed without error")
			}
			got := filepath.ToSlash(err.Error()) + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *rewrite {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -rewrite)", err)
			}
			if got != string(want) {
				t.Errorf("error text differs from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestEveryLineIsOneProblem checks the shape of Validate's error: one problem
// per line, each starting with the file name and a field path.
func TestEveryLineIsOneProblem(t *testing.T) {
	_, err := ParseProfileFile(filepath.Join("testdata", "invalid", "many-problems.yaml"))
	lines := strings.Split(err.Error(), "\n")
	if len(lines) < 15 {
		t.Errorf("only %d problems reported", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(filepath.ToSlash(l), "testdata/invalid/many-problems.yaml: ") {
			t.Errorf("line %q does not start with the file name", l)
		}
	}
}

// TestProfileRoundTrip re-parses each profile from its own YAML and from a
// fresh encoding, and gets the same Device.
func TestProfileRoundTrip(t *testing.T) {
	for _, name := range ProfileNames() {
		p, err := LoadProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.Device()
		raw, err := p.YAML()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := profileFS.ReadFile("profiles/" + name + ".yaml")
		if !bytes.Equal(raw, data) {
			t.Errorf("%s: YAML() is not the embedded file", name)
		}
		fresh := *p
		fresh.raw = nil
		enc, err := fresh.YAML()
		if err != nil {
			t.Fatal(err)
		}
		q, err := ParseProfile(enc, name+".yaml")
		if err != nil {
			t.Fatalf("%s: re-encoded profile does not parse: %v\n%s", name, err, enc)
		}
		got, _ := q.Device()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: round trip changed the device:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// TestParseProfileFileNameDefault: a profile without a name takes the file's.
func TestParseProfileFileNameDefault(t *testing.T) {
	data, _ := profileFS.ReadFile("profiles/ufs4-phone-12gb.yaml")
	data = bytes.Replace(data, []byte("name: ufs4-phone-12gb\n"), nil, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "my-phone.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := ParseProfileFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "my-phone" || p.File() != path {
		t.Errorf("name %q file %q", p.Name, p.File())
	}
	errgolden.Check(t, "missing-yaml", errgolden.Err(ParseProfileFile(filepath.Join(dir, "missing.yaml"))))
}

func TestWriteTable(t *testing.T) {
	p, err := LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "ufs4-phone-12gb.table")
	if *rewrite {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -rewrite)", err)
	}
	if b.String() != string(want) {
		t.Errorf("table differs from %s:\n%s", golden, b.String())
	}
}
