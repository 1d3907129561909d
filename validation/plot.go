package validation

import (
	"fmt"

	"github.com/lessim/lessim/reports"
)

// WritePlot draws measured (mean, with a min–max bar) against predicted
// tokens/s, one colour per policy, with the line y = x, to prefix.png and
// prefix.svg (reports.WriteVsPlot, which writes each file atomically). It
// returns the files written.
func WritePlot(s *Summary, prefix string) ([]string, error) {
	pts := make([]reports.VsPoint, len(s.Points))
	for i, pt := range s.Points {
		pts[i] = reports.VsPoint{Series: pt.Policy, Predicted: pt.PredictedTPS, Measured: pt.MeasuredTPS, Min: pt.MeasuredMin, Max: pt.MeasuredMax}
	}
	return reports.WriteVsPlot(fmt.Sprintf("Predicted vs measured tokens/s (MAPE %.1f%%)", s.MAPE),
		"predicted tokens/s (simulator, calibrated profile)", "measured tokens/s (live, mean of repeats)", pts, prefix)
}
