package ablation

import (
	"fmt"
	"strings"

	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
)

// WritePlot draws tokens/s per step that ran as a bar chart (the reference
// row in its own colour), each bar labelled with its value, to prefix.png
// and prefix.svg (reports.WriteBarPlot, which writes each file atomically).
// It returns the files written.
func WritePlot(a *Ablation, prefix string) ([]string, error) {
	var bars []reports.Bar
	for i := range a.Rows {
		r := &a.Rows[i]
		if r.Outcome == nil {
			continue
		}
		// NB: the table's name without the step's "+ "
		bars = append(bars, reports.Bar{Label: strings.Replace(r.label(), ") + ", ") ", 1), Value: r.Outcome.Result.TokensPerSec, Reference: r.Step.Reference})
	}
	first := a.Rows[0].Outcome
	title := fmt.Sprintf("LES ablation: %s on %s, expert cache %s", first.Model.Name, first.Device.Name, sim.FormatBytes(first.Spec.Cache.Bytes))
	return reports.WriteBarPlot(title, "decode tokens/s", bars, prefix)
}
