package traces

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// ioRewrite regenerates testdata/io-*.parquet (named apart from other tests'
// flags in this package): go test ./traces -run Golden -rewrite-io
var ioRewrite = flag.Bool("rewrite-io", false, "rewrite traces/testdata/io-* golden files")

// ioGoldenMeta and ioGoldenSteps define testdata/io-small.parquet: every
// optional column, some nulls, two lookahead depths, hit flags.
func ioGoldenMeta() Meta {
	return ioTestMeta(ioShape{layers: 4, experts: 16, topK: 3, hidden: 6, depth: 2, logits: true, routerInputs: true})
}

func ioGoldenSteps() []Step {
	return ioTestSteps(rand.New(rand.NewPCG(2026, 11)), ioGoldenMeta(), 12, true)
}

// TestGoldenFile reads the committed testdata/io-small.parquet (format
// version 1): old files must keep reading. The file must also equal, byte for
// byte, what the Writer produces today from the same steps, which pins the
// writer's determinism across processes and machines. If arrow-go is upgraded
// and only the bytes differ, regenerate with -rewrite-io and review.
func TestGoldenFile(t *testing.T) {
	path := filepath.Join("testdata", "io-small.parquet")
	fresh := ioWrite(t, ioGoldenMeta(), ioGoldenSteps(), 0)
	if *ioRewrite {
		if err := os.WriteFile(path, fresh, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := ioRead(data, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := ioDiff(got, ioGoldenSteps()); d != "" {
		t.Fatalf("%s: %s", path, d)
	}
	if !bytes.Equal(data, fresh) {
		t.Errorf("%s (%d bytes) differs from a fresh write (%d bytes): writer output changed; rerun with -rewrite-io if intended", path, len(data), len(fresh))
	}
}

// FuzzReader feeds arbitrary bytes to the reader: it must return an error or
// steps, never panic, and every step it returns must pass Validate. Seeds: a
// small valid file written here, cut and patched copies of it, and
// testdata/io-*.parquet (the golden file and fuzzer finds that made arrow-go
// panic).
func FuzzReader(f *testing.F) {
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, hidden: 3, depth: 1, logits: true, routerInputs: true})
	small := ioWrite(f, m, ioTestSteps(rand.New(rand.NewPCG(11, 11)), m, 6, true), 0)
	f.Add(small)
	f.Add(small[:len(small)-9])
	f.Add(small[:len(small)/2])
	f.Add(ioPatchFooterLen(small, 17))
	f.Add([]byte("PAR1PAR1"))
	files, _ := filepath.Glob(filepath.Join("testdata", "io-*.parquet"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newReader(pqNoCloseRA{bytes.NewReader(data)}, "fuzz.parquet", 4)
		if err != nil {
			return
		}
		defer r.Close()
		meta := r.Meta()
		for n := 0; r.Next(); n++ {
			if err := Validate(meta, r.Step()); err != nil {
				t.Fatalf("step %d passed the reader but not Validate: %v", n, err)
			}
			if n > 1<<16 {
				break
			}
		}
	})
}
