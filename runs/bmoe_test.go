package runs

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

const refMetrics = "../../shared/reference/runs/qwen.metrics.csv"

// Reference: ../shared/reference/README.md "runs/qwen.metrics.csv" (BigMoeOnEdge,
// github.com/Helldez/BigMoeOnEdge, Apache-2.0): 128 decoded tokens, 176.8 ms mean.
func TestReadBMoEMetricsReference(t *testing.T) {
	if _, err := os.Stat(refMetrics); err != nil {
		t.Skipf("reference run absent: %v", err)
	}
	r, err := Read(refMetrics, "bmoe-metrics-csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tokens) != 128 {
		t.Fatalf("tokens = %d, want 128", len(r.Tokens))
	}
	if got := r.MeanWallNS() / 1e6; got < 176 || got > 178 {
		t.Errorf("mean wall = %.2f ms, want about 176.8 (summary s/tok=0.177)", got)
	}
	if r.Summary["tokens"] != "128" {
		t.Errorf("summary tokens = %q", r.Summary["tokens"])
	}
	first := r.Tokens[0]
	if first.WallNS != 265825000 || first.ReadBytes != 456413184 || first.MgmtNS != 57378000 || first.MajorFaults != 189 {
		t.Errorf("first token = %+v", first)
	}
	for _, f := range []Field{FieldWall, FieldIO, FieldCompute, FieldStall, FieldMgmt, FieldRead, FieldFaults, FieldCPU, FieldHitPct} {
		if !r.Has(f) {
			t.Errorf("field %s missing", f)
		}
	}
}

const tinyMetrics = "step,steps,wall_ms,read_bytes,mgmt_ms\n1,2,10.5,100,1\n2,2,9.25,0,0.5\n# summary tokens=2 s/tok=0.010\n"

func TestParseBMoEMetrics(t *testing.T) {
	r, err := ParseBMoEMetrics(strings.NewReader(tinyMetrics), "tiny.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tokens) != 2 || r.Tokens[1].WallNS != 9250000 || r.Tokens[0].ReadBytes != 100 || r.Tokens[1].MgmtNS != 500000 {
		t.Fatalf("tokens = %+v", r.Tokens)
	}
	if r.Has(FieldStall) || r.Tokens[0].StallNS != -1 {
		t.Errorf("stall must be absent: %+v", r.Tokens[0])
	}
}

func TestParseBMoEMetricsGzipBOM(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("\ufeff" + tinyMetrics))
	zw.Close()
	dir := t.TempDir()
	p := filepath.Join(dir, "m.csv")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadBMoEMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tokens) != 2 {
		t.Fatalf("tokens = %d", len(r.Tokens))
	}
}

func TestParseBMoEMetricsErrors(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"empty", ""},
		{"no rows", "step,wall_ms\n"},
		{"no wall", "step,io_ms\n1,2\n"},
		{"dup col", "step,wall_ms,wall_ms\n"},
		{"nan", "step,wall_ms\n1,NaN\n"},
		{"inf", "step,wall_ms\n1,+Inf\n"},
		{"negative", "step,wall_ms\n1,-3\n"},
		{"huge", "step,wall_ms\n1,1e300\n"},
		{"garbage", "step,wall_ms\n1,abc\n"},
		{"step gap", "step,wall_ms\n1,2\n3,2\n"},
		{"too many", "step,wall_ms\n1,2,3\n"},
		{"short mid", "step,wall_ms\n1\n2,3\n"},
		{"truncated", "step,wall_ms\n1,2\n2"},
		{"zero wall", "step,wall_ms\n1,2\n2,0\n"},
		{"zero wall 0.000", "step,wall_ms\n1,0.000\n"},
		{"sub-ns wall", "step,wall_ms\n1,1e-7\n"},
		{"1 ns per token", "step,wall_ms\n1,0.000001\n"},
		{"hit rate 200%", "step,wall_ms,cache_hit_pct\n1,2,200\n"},
		{"zero compute", "step,wall_ms,compute_ms\n1,2,0\n"},
		{"zero cpu", "step,wall_ms,cpu_ms\n1,2,0\n"},
		{"dup summary key", "step,wall_ms\n1,2\n# summary tokens=1 cache_budget_MiB=4000.0 cache_budget_MiB=100\n"},
		{"two summaries", "step,wall_ms\n1,2\n# summary tokens=1\n# summary s/tok=0.002\n"},
		{"summary tokens short", "step,wall_ms\n1,2\n# summary tokens=128\n"},
		{"summary tokens long", "step,wall_ms\n1,2\n2,2\n3,2\n# summary tokens=2\n"},
		{"summary tokens garbage", "step,wall_ms\n1,2\n# summary tokens=many\n"},
		{"steps change", "step,steps,wall_ms\n1,2,2\n2,3,2\n"},
		{"beyond steps", "step,steps,wall_ms\n1,1,2\n2,1,2\n"},
		{"steps fraction", "step,steps,wall_ms\n1,1.5,2\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseBMoEMetrics(strings.NewReader(c.in), "x.csv")
			errgolden.Check(t, "error", err)
		})
	}
}

// TestReadBMoEMetricsPath: errors name the file as the caller gave it
// (sub/r.csv, not r.csv), and so does the run's Name.
func TestReadBMoEMetricsPath(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "r.csv"), []byte("step,wall_ms\n1,NaN\n"), 0o644)
	os.WriteFile(filepath.Join(sub, "ok.csv"), []byte(tinyMetrics), 0o644)
	t.Chdir(dir)
	_, err := ReadBMoEMetrics(filepath.Join("sub", "r.csv"))
	errgolden.Check(t, "relative path", err) // NB: sub/r.csv, as given
	r, err := ReadBMoEMetrics(filepath.Join("sub", "ok.csv"))
	if want := filepath.Join("sub", "ok.csv"); err != nil || r.Name != want {
		t.Errorf("run %+v, err %v: want Name %s", r, err, want)
	}
}

func TestReadUnknownFormat(t *testing.T) {
	_, err := Read("x", "nope")
	errgolden.Check(t, "valid-bmoe-metrics-csv", err)
}

func FuzzParseBMoEMetrics(f *testing.F) {
	f.Add([]byte(tinyMetrics))
	f.Add([]byte("step,wall_ms\n1,NaN\n"))
	f.Add([]byte("\ufeffstep,wall_ms\n1,2\n2"))
	if b, err := os.ReadFile(refMetrics); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseBMoEMetrics(bytes.NewReader(b), "fuzz.csv")
		if err != nil {
			return
		}
		for i, tok := range r.Tokens {
			if tok.Step != i+1 || tok.WallNS <= 0 {
				t.Fatalf("token %d = %+v", i, tok)
			}
		}
	})
}

// TestParseBMoEMetricsNotText: a Parquet file (a lessim live series read in
// the default format) is ErrParquet, and other binary data says so; neither
// error carries the file's bytes (it printed `header "PAR1\x15\x04…"`).
func TestParseBMoEMetricsNotText(t *testing.T) {
	_, err := ParseBMoEMetrics(strings.NewReader("PAR1\x15\x04\x15\x80\x01step,wall_ms\n"), "ser.parquet")
	if !errors.Is(err, ErrParquet) {
		t.Errorf("Parquet: %v, want ErrParquet", err)
	}
	errgolden.Check(t, "parquet", err)
	_, err = ParseBMoEMetrics(strings.NewReader("GGUF\x03\x00\x00\x00\xff\xfe\n"), "m.gguf")
	errgolden.Check(t, "m-gguf-1-binary", err)
}
