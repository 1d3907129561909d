package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseGrid: a sweep file never makes ParseGrid or Expand panic; every
// refusal is a *Problems listing at least one problem; a grid that parses has
// at most MaxPoints points, and its expansion gives valid points whose ids are
// their specs' hashes.
func FuzzParseGrid(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "docs", "examples", "*.yaml"))
	seeds = append(seeds, filepath.Join("..", "cmd", "lessim", "testdata", "sweep-bad.yaml"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(smallGrid))
	f.Add([]byte("axes:\n  cache.size: [1GiB, 2GiB]\n  speculative: [null, {block: 4, accept: 0.7, drafter: {kind: mtp}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// NB: no file paths: Expand hashes the trace files a grid names.
		if strings.Contains(string(data), "path") || strings.Contains(string(data), "file") {
			return
		}
		g, err := ParseGrid(data, "f.yaml")
		if err != nil {
			checkProblems(t, err)
			return
		}
		n, err := g.size()
		if err != nil || n > MaxPoints {
			t.Fatalf("a parsed grid of %d points: %v", n, err)
		}
		if n > 2000 {
			return // valid, but slow to expand on every input
		}
		pts, err := g.Expand()
		if err != nil {
			checkProblems(t, err)
			return
		}
		if len(pts) == 0 || len(pts) > n {
			t.Fatalf("%d points from a grid of %d", len(pts), n)
		}
		for _, p := range pts {
			if err := p.Spec.Validate(); err != nil || p.ID != p.Spec.Hash() {
				t.Fatalf("point %d: %v, id %s", p.Index, err, p.ID)
			}
		}
	})
}

func checkProblems(t *testing.T, err error) {
	t.Helper()
	var p *Problems
	if !errors.As(err, &p) || len(p.List) == 0 || err.Error() == "" {
		t.Fatalf("refused without a problem listed: %T %v", err, err)
	}
}
