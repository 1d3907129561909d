package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/atomicfile/atomictest"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/sim"
)

func TestWritePassPlot(t *testing.T) {
	r := &sim.Result{TimeNS: 3e8, LatencyP50NS: 1e8, LatencyP99NS: 1.2e8, Series: []sim.PassSample{
		{StartNS: 0, TimeNS: 1e8, StallNS: 4e7, Accepted: 1},
		{StartNS: 1e8, TimeNS: 2e8, StallNS: 1e8, Accepted: 2},
	}}
	prefix := filepath.Join(t.TempDir(), "run")
	files, err := WritePassPlot(r, "test", TrimPlotExt(prefix+".png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("files %v, want a PNG and an SVG", files)
	}
	png, err := os.ReadFile(prefix + ".png")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("%s.png is not a PNG (%v)", prefix, err)
	}
	svg, err := os.ReadFile(prefix + ".svg")
	if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "p99 120.0 ms") {
		t.Fatalf("%s.svg lacks the plot or its p99 legend (%v)", prefix, err)
	}
	if _, err := WritePassPlot(&sim.Result{}, "empty", prefix); err == nil {
		t.Fatal("a result without a series should be refused")
	}
}

// TestWritePassPlotKeepsOld: a plot that cannot be written (its .svg path is
// a folder) leaves no temporary, and a plot file already there stays whole.
func TestWritePassPlotKeepsOld(t *testing.T) {
	r := &sim.Result{TimeNS: 3e8, LatencyP50NS: 1e8, LatencyP99NS: 1.2e8, Series: []sim.PassSample{
		{StartNS: 0, TimeNS: 1e8, StallNS: 4e7, Accepted: 1},
	}}
	dir := t.TempDir()
	prefix := filepath.Join(dir, "run")
	if err := os.Mkdir(prefix+".svg", 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := WritePassPlot(r, "test", prefix)
	errgolden.Check(t, "not-a-regular-file", err)
	if len(files) != 1 || files[0] != prefix+".png" {
		t.Errorf("files %v, want only the PNG", files)
	}
	atomictest.NoTemporaries(t, dir)
}
