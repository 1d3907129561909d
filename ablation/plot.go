package ablation

import (
	"fmt"
	"image/color"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
)

// WritePlot draws tokens/s per step that ran as a bar chart (the reference
// row in its own colour), each bar labelled with its value, to prefix.png
// and prefix.svg (reports.PlotFormats). Both formats are drawn before either
// file is written, and each is written atomically (internal/atomicfile): a
// failure leaves what was at the target. It returns the files written.
func WritePlot(a *Ablation, prefix string) ([]string, error) {
	var steps, refs plotter.Values
	var names []string
	for i := range a.Rows {
		r := &a.Rows[i]
		if r.Outcome == nil {
			continue
		}
		v := r.Outcome.Result.TokensPerSec
		// NB: the table's name without the step's "+ "
		names = append(names, wrap(strings.Replace(r.label(), ") + ", ") ", 1), 20))
		if r.Step.Reference {
			steps, refs = append(steps, 0), append(refs, v)
		} else {
			steps, refs = append(steps, v), append(refs, 0)
		}
	}
	first := a.Rows[0].Outcome
	p := plot.New()
	p.Title.Text = fmt.Sprintf("LES ablation: %s on %s, expert cache %s", first.Model.Name, first.Device.Name, sim.FormatBytes(first.Spec.Cache.Bytes))
	p.Y.Label.Text = "decode tokens/s"
	p.Add(plotter.NewGrid())
	ymax := 0.0
	for i, vs := range []plotter.Values{steps, refs} {
		bars, err := plotter.NewBarChart(vs, vg.Points(36))
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		bars.Color, bars.LineStyle.Width = barColors[i], 0
		p.Add(bars)
		for _, v := range vs {
			ymax = max(ymax, v)
		}
	}
	labels, err := valueLabels(steps, refs)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	p.Add(labels)
	p.NominalX(names...)
	// NB: explicit limits, or gonum/plot clips the tallest bar and its label.
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min, p.Y.Max = 0, max(ymax*1.15, 1)
	return reports.SavePlot(p, prefix, vg.Length(max(6, 1.6*float64(len(names))))*vg.Inch, 4.5*vg.Inch)
}

// wrap breaks s into lines of at most width runes at spaces (a longer word
// keeps its own line).
func wrap(s string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			lines, line = append(lines, line), w
		}
	}
	return strings.Join(append(lines, line), "\n")
}

// barColors are the steps' and the reference's bars (Okabe–Ito blue and
// vermillion, as reports draws its first two series).
var barColors = []color.Color{color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}}

// valueLabels puts each bar's value above it.
func valueLabels(steps, refs plotter.Values) (*plotter.Labels, error) {
	var xy plotter.XYs
	var text []string
	for i := range steps {
		v := steps[i] + refs[i]
		xy = append(xy, plotter.XY{X: float64(i), Y: v})
		text = append(text, fmt.Sprintf("%.2f", v))
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: text})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = -0.5
		l.TextStyle[i].YAlign = 0.2
	}
	return l, nil
}
