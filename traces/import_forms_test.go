package traces

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// tsGzip compresses s.
func tsGzip(t testing.TB, s []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(s); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImportBMoEForms: a BOM, gzip (whatever the name), both, CRLF line ends
// and a missing final newline after a complete row all import the same steps.
func TestImportBMoEForms(t *testing.T) {
	_, want, err := parseBMoE(strings.NewReader(tsBMoEBase), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	base := []byte(tsBMoEBase)
	bom := append([]byte("\xef\xbb\xbf"), base...)
	for name, in := range map[string][]byte{
		"bom":              bom,
		"gzip":             tsGzip(t, base),
		"gzip+bom":         tsGzip(t, bom),
		"crlf":             []byte(strings.ReplaceAll(tsBMoEBase, "\n", "\r\n")),
		"no final nl":      bytes.TrimSuffix(base, []byte("\n")),
		"two gzip members": append(tsGzip(t, base[:100]), tsGzip(t, base[100:])...),
	} {
		_, got, err := parseBMoE(bytes.NewReader(in), "t.csv")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: steps differ from the plain file", name)
		}
	}
	// Through the file API: a gzip file named .csv is still read.
	path := filepath.Join(t.TempDir(), "plain-name.csv")
	if err := os.WriteFile(path, tsGzip(t, base), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, got, err := ImportBMoE(path); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ImportBMoE of a gzip file: %v", err)
	}
}

// TestImportBMoETruncated: a file cut inside its last line (no final
// newline) is reported as truncated at that line, however it was cut, and so
// is a gzip stream that ends early.
func TestImportBMoETruncated(t *testing.T) {
	full := strings.TrimSuffix(tsBMoEBase, "\n") // last line is 9
	for _, cut := range []string{"0,1,0,1,1,0,0.4,0,15", "0,1,0,1,1,0,0.4,0,", "0,1,0,1,1,0,0.", "0,1,0,1,1", "0,1,0,", "0"} {
		in := strings.TrimSuffix(full, "0,1,0,1,1,0,0.4,0,150") + cut
		_, _, err := parseBMoE(strings.NewReader(in), "t.csv")
		errgolden.Check(t, "t-csv-9-truncated", err)
	}
	// The same incomplete row followed by a newline is an ordinary row error.
	in := strings.TrimSuffix(full, "0,1,0,1,1,0,0.4,0,150") + "0,1,0,1,1\n"
	if _, _, err := parseBMoE(strings.NewReader(in), "t.csv"); err == nil || strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), "t.csv:9: 5 fields") {
		t.Errorf("incomplete row with newline: %v", err)
	}
	// A complete last row without newline whose token lacks slots: truncated.
	in = strings.TrimSuffix(full, "\n0,1,0,1,1,0,0.4,0,150")
	if _, _, err := parseBMoE(strings.NewReader(in), "t.csv"); err == nil || !strings.Contains(err.Error(), "t.csv:8: truncated file") {
		t.Errorf("cut after a whole row inside a token: %v", err)
	}
	z := tsGzip(t, []byte(tsBMoEBase))
	_, _, err := parseBMoE(bytes.NewReader(z[:len(z)-12]), "t.csv.gz")
	if err == nil || !strings.Contains(err.Error(), "truncated file: the gzip stream ends early") || !strings.HasPrefix(err.Error(), "t.csv.gz:") {
		t.Errorf("cut gzip: %v", err)
	}
	if _, _, err := parseBMoE(bytes.NewReader([]byte{0x1f, 0x8b, 1}), "t.gz"); err == nil || !strings.HasPrefix(err.Error(), "t.gz: gzip:") {
		t.Errorf("gzip header only: %v", err)
	}
}

// TestImportBMoEReferenceGzip: the published qwen trace, gzip-compressed and
// with a BOM, imports to exactly the steps of the plain file.
func TestImportBMoEReferenceGzip(t *testing.T) {
	path := filepath.Join(tsReferenceDir(), "traces", "qwen.route.csv")
	plain, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("reference trace absent: %v", err)
	}
	meta, want, err := ImportBMoE(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(t.TempDir(), "qwen.route.csv")
	if err := os.WriteFile(gz, tsGzip(t, append([]byte("\xef\xbb\xbf"), plain...)), 0o644); err != nil {
		t.Fatal(err)
	}
	meta2, got, err := ImportBMoE(gz)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(meta2, meta) {
		t.Error("gzip+BOM reference import differs from the plain one")
	}
	// Cut mid-row: truncation at the last line.
	cut := plain[:len(plain)-7]
	lines := bytes.Count(cut, []byte("\n")) + 1
	_, _, err = parseBMoE(bytes.NewReader(cut), "qwen.route.csv")
	if want := fmt.Sprintf("qwen.route.csv:%d: truncated file", lines); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("cut reference: %v, want %q", err, want)
	}
}
