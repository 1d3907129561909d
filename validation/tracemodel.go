package validation

import (
	"fmt"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// checkTraceModel refuses a trace that is not of model m, the GGUF at path
// (traces.ModelDiffers): a trace of another model would simulate other
// routing against these live runs.
func checkTraceModel(trace string, m *devices.ModelSpec, path string) error {
	why, err := traces.ModelDiffers(trace, m, path)
	switch {
	case err != nil:
		return fmt.Errorf("trace: %w", err)
	case why != "":
		return fmt.Errorf("trace %s is not of the model %s: %s (record it with this model, or leave --trace out)", trace, path, why)
	}
	return nil
}
