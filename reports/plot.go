package reports

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/sim"
)

// PlotFormats are the files WritePassPlot writes, by extension.
var PlotFormats = []string{".png", ".svg"}

// WritePassPlot draws each decode pass's time per emitted token and its
// stalled part over the run (x: decode time in seconds, y: milliseconds),
// with the p50 and p99 per-token latency as reference lines, to prefix.png and
// prefix.svg. It needs Result.Series (sim.Config.KeepSeries) and returns the
// files written.
func WritePassPlot(r *sim.Result, title, prefix string) ([]string, error) {
	if len(r.Series) == 0 {
		return nil, fmt.Errorf("plot: the result has no per-pass series (set KeepSeries)")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "decode time (s)"
	p.Y.Label.Text = "per token (ms)"
	total, stall := make(plotter.XYs, len(r.Series)), make(plotter.XYs, len(r.Series))
	ymax := 0.0
	for i, s := range r.Series {
		x := float64(s.StartNS) / 1e9
		a := float64(max(s.Accepted, 1))
		total[i] = plotter.XY{X: x, Y: float64(s.TimeNS) / a / 1e6}
		stall[i] = plotter.XY{X: x, Y: float64(s.StallNS) / a / 1e6}
		ymax = max(ymax, total[i].Y)
	}
	lt, err := plotter.NewLine(total)
	if err != nil {
		return nil, err
	}
	lt.Color = plotColor(0)
	ls, err := plotter.NewLine(stall)
	if err != nil {
		return nil, err
	}
	ls.Color = plotColor(1)
	p.Add(lt, ls)
	p.Legend.Add("time per token", lt)
	p.Legend.Add("of which stalled on experts", ls)
	xmax := float64(r.TimeNS) / 1e9
	for i, q := range []struct {
		name string
		ns   int64
	}{{"p50", r.LatencyP50NS}, {"p99", r.LatencyP99NS}} {
		y := float64(q.ns) / 1e6
		ref, err := plotter.NewLine(plotter.XYs{{X: 0, Y: y}, {X: xmax, Y: y}})
		if err != nil {
			return nil, err
		}
		ref.Color = plotColor(2 + i)
		ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ref)
		p.Legend.Add(fmt.Sprintf("%s %.1f ms", q.name, y), ref)
	}
	p.Legend.Top = true
	// NB: explicit limits, or gonum/plot clips the top of the highest line.
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = 0, ymax*1.25
	p.Add(plotter.NewGrid())
	return SavePlot(p, prefix, 8*vg.Inch, 4*vg.Inch)
}

// SavePlot draws p in every PlotFormat and writes prefix.EXT atomically
// (internal/atomicfile): a failed write leaves the file that was there. All
// formats are drawn before any file is written. It returns the files written.
func SavePlot(p *plot.Plot, prefix string, w, h vg.Length) ([]string, error) {
	drawn := make([]io.WriterTo, len(PlotFormats))
	for i, ext := range PlotFormats {
		wt, err := p.WriterTo(w, h, strings.TrimPrefix(ext, "."))
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", filepath.Base(prefix+ext), err)
		}
		drawn[i] = wt
	}
	var files []string
	for i, ext := range PlotFormats {
		path := prefix + ext
		err := atomicfile.Write(path, func(out io.Writer) error {
			_, err := drawn[i].WriteTo(out)
			return err
		})
		if err != nil {
			return files, fmt.Errorf("plot %s: %w", filepath.Base(path), err)
		}
		files = append(files, path)
	}
	return files, nil
}

// CheckPlotPrefix refuses a plot prefix that, its .png or .svg dropped,
// names a folder ("plots/", ".") or nothing: the plots would be the hidden
// files plots/.png and plots/.svg.
func CheckPlotPrefix(prefix string) error {
	p := TrimPlotExt(prefix)
	if base := filepath.Base(p); p == "" || os.IsPathSeparator(p[len(p)-1]) || base == "." || base == ".." {
		return fmt.Errorf("names a folder, not the files' name: give a prefix such as %s (it writes PREFIX.png and PREFIX.svg)", filepath.Join(p, "run"))
	}
	return nil
}

// PlotFiles are the files a plot prefix names, one per PlotFormats (none
// without a prefix).
func PlotFiles(prefix string) []string {
	if prefix == "" {
		return nil
	}
	var files []string
	for _, ext := range PlotFormats {
		files = append(files, TrimPlotExt(prefix)+ext)
	}
	return files
}

// TrimPlotExt drops a .png or .svg a user gave on a plot prefix.
func TrimPlotExt(prefix string) string {
	for _, ext := range PlotFormats {
		prefix = strings.TrimSuffix(prefix, ext)
	}
	return prefix
}
