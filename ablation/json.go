package ablation

import (
	"encoding/json"
	"io"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/sim"
)

// jsonOutput is the ablation as --format json prints it.
type jsonOutput struct {
	Settings jsonSettings `json:"settings"`
	Steps    []jsonStep   `json:"steps"`
}

// jsonSettings are the ablation's own settings (the rest is in each spec).
type jsonSettings struct {
	Options     map[string]string `json:"options"`
	Seed        uint64            `json:"seed"`
	SpecBlock   int               `json:"spec_block"`
	SpecAccept  float64           `json:"spec_accept"`
	Reference   bool              `json:"reference"`
	LeaveOneOut bool              `json:"leave_one_out,omitempty"`
}

// jsonStep is one row. spec, spec_hash and result are simulate's fields of
// the same names: a file holding just those three (or the spec alone) is a
// valid `simulate --spec` input that reproduces result byte for byte.
// ablation_step and ablation_order are the labels reports read.
type jsonStep struct {
	Order      int              `json:"ablation_order"`
	Label      string           `json:"ablation_step"`
	Key        string           `json:"key"`
	About      string           `json:"about"`
	Reference  bool             `json:"reference,omitempty"`
	Without    string           `json:"without,omitempty"`
	Skipped    string           `json:"skipped,omitempty"`
	Named      []Change         `json:"named_changes"`
	Prev       int              `json:"builds_on,omitempty"`
	Changes    []Difference     `json:"changes,omitempty"`
	VsPrevious float64          `json:"speedup_vs_previous,omitempty"`
	VsBaseline float64          `json:"speedup_vs_baseline,omitempty"`
	Spec       *experiment.Spec `json:"spec,omitempty"`
	SpecHash   string           `json:"spec_hash,omitempty"`
	Result     *sim.Result      `json:"result,omitempty"`
}

// WriteJSON prints the ablation as indented JSON: its settings and, per step,
// its label and order, the option changes it names, what they changed in the
// resolved spec from the step it builds on (builds_on: that step's
// ablation_order), the speedups, and its full resolved spec,
// spec hash and result.
func WriteJSON(w io.Writer, a *Ablation) error {
	out := jsonOutput{Settings: jsonSettings{Options: a.Settings.Base, Seed: a.Settings.Seed,
		SpecBlock: a.Settings.SpecBlock, SpecAccept: a.Settings.SpecAccept, Reference: a.Settings.Reference,
		LeaveOneOut: a.Settings.LeaveOneOut}}
	if out.Settings.Options == nil {
		out.Settings.Options = map[string]string{}
	}
	for i := range a.Rows {
		r := &a.Rows[i]
		s := jsonStep{Order: r.Order, Label: r.Step.Label, Key: r.Step.Key, About: r.Step.About, Reference: r.Step.Reference, Without: r.Step.Without,
			Skipped: r.Skipped, Named: r.Step.Changes, Changes: r.Changes, VsPrevious: r.VsPrevious, VsBaseline: r.VsBaseline}
		if r.Prev >= 0 {
			s.Prev = a.Rows[r.Prev].Order
		}
		if o := r.Outcome; o != nil {
			s.Spec, s.SpecHash, s.Result = &o.Spec, o.Hash, o.Result
		}
		out.Steps = append(out.Steps, s)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
