package reports

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// vsColors tells policies apart in WriteComparisonPlot (cycled).
var vsColors = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
}

// WriteComparisonPlot draws measured (mean, with a min–max bar) against
// predicted tokens/s, one colour per policy, with the line y = x, to
// prefix.png and prefix.svg (SavePlot, which writes each file atomically),
// and returns the files written. Both axes run from 0 to 110% of the
// largest value.
func WriteComparisonPlot(c *Comparison, prefix string) ([]string, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Predicted vs measured tokens/s (MAPE %.1f%%)", c.MAPE)
	p.X.Label.Text = "predicted tokens/s (simulator, calibrated profile)"
	p.Y.Label.Text = "measured tokens/s (live, mean of repeats)"
	p.Add(plotter.NewGrid())
	hi := 0.0
	for _, pt := range c.Points {
		hi = max(hi, pt.PredictedTPS, pt.MeasuredMax)
	}
	if !(hi > 0) {
		return nil, fmt.Errorf("plot: no positive speed to draw")
	}
	hi *= 1.1
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: hi, Y: hi}})
	if err != nil {
		return nil, err
	}
	diag.Color, diag.Dashes = color.Gray{Y: 0x80}, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add("y = x", diag)
	var series []string
	for _, pt := range c.Points {
		if !slices.Contains(series, pt.Policy) {
			series = append(series, pt.Policy)
		}
	}
	for i, name := range series {
		var xys plotter.XYs
		var errs plotter.YErrors
		for _, pt := range c.Points {
			if pt.Policy == name {
				xys = append(xys, plotter.XY{X: pt.PredictedTPS, Y: pt.MeasuredTPS})
				errs = append(errs, struct{ Low, High float64 }{pt.MeasuredTPS - pt.MeasuredMin, pt.MeasuredMax - pt.MeasuredTPS})
			}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		c := vsColors[i%len(vsColors)]
		sc.Color, sc.Shape, sc.Radius = c, draw.CircleGlyph{}, vg.Points(3.5)
		eb, err := plotter.NewYErrorBars(errBars{xys, errs})
		if err != nil {
			return nil, err
		}
		eb.Color = c
		p.Add(eb, sc)
		p.Legend.Add(name, sc)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, hi, 0, hi
	p.Legend.Top, p.Legend.Left = true, true
	return SavePlot(p, prefix, 6*vg.Inch, 6*vg.Inch)
}

// errBars feeds plotter.NewYErrorBars.
type errBars struct {
	plotter.XYs
	plotter.YErrors
}
