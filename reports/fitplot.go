package reports

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WriteFitPlot draws measured and predicted per-token times over a run
// (x: token, y: milliseconds; inputs in nanoseconds) to prefix.png and
// prefix.svg, for a calibration's fit. It returns the files written.
func WriteFitPlot(measured, predicted []float64, title, prefix string) ([]string, error) {
	if len(measured) == 0 || len(measured) != len(predicted) {
		return nil, fmt.Errorf("plot: need equally many measured and predicted tokens (got %d and %d)", len(measured), len(predicted))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "decoded token"
	p.Y.Label.Text = "time per token (ms)"
	ymax := 0.0
	for i, series := range []struct {
		name string
		ns   []float64
	}{{"measured", measured}, {"predicted", predicted}} {
		xy := make(plotter.XYs, len(series.ns))
		for j, v := range series.ns {
			xy[j] = plotter.XY{X: float64(j + 1), Y: v / 1e6}
			ymax = max(ymax, xy[j].Y)
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = plotColor(i)
		if i == 1 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(series.name, l)
	}
	p.Legend.Top = true
	// NB: explicit limits, or gonum/plot clips the top of the highest line.
	p.X.Min, p.X.Max = 0, float64(len(measured)+1)
	p.Y.Min, p.Y.Max = 0, ymax*1.2
	p.Add(plotter.NewGrid())
	return SavePlot(p, prefix, 8*vg.Inch, 4*vg.Inch)
}
