package reports

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Bar is one bar of WriteBarPlot: its label (wrapped at 20 runes), its
// value, and whether it is the reference (drawn in the second colour).
type Bar struct {
	Label     string
	Value     float64
	Reference bool
}

// WriteBarPlot draws bars, each labelled with its value, under title with
// the y axis labelled ylabel, to prefix.png and prefix.svg (SavePlot). The
// ablation's steps are drawn this way.
func WriteBarPlot(title, ylabel string, bs []Bar, prefix string) ([]string, error) {
	var steps, refs plotter.Values
	var names []string
	for _, b := range bs {
		names = append(names, wrap(b.Label, 20))
		if b.Reference {
			steps, refs = append(steps, 0), append(refs, b.Value)
		} else {
			steps, refs = append(steps, b.Value), append(refs, 0)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	ymax := 0.0
	for i, vs := range []plotter.Values{steps, refs} {
		bars, err := plotter.NewBarChart(vs, vg.Points(36))
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		bars.Color, bars.LineStyle.Width = plotColor(i), 0
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
	return SavePlot(p, prefix, vg.Length(max(6, 1.6*float64(len(names))))*vg.Inch, 4.5*vg.Inch)
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
