package devices

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Row is one line of a profile table: a dotted field name, its value as
// written (with its unit) and its source.
type Row struct {
	Field  string
	Value  string
	Source string
}

// Rows lists every number of the profile in schema order, curve points as
// "flash.single_lane[i]" with value "<bandwidth> @ <read>[ × <n> lanes]".
func (p *Profile) Rows() []Row {
	var rows []Row
	for _, f := range p.fields() {
		if f.optional && !f.q.set {
			continue
		}
		rows = append(rows, Row{f.path, f.q.Value, f.q.Source})
		if f.path == "memory.efficiency" {
			for _, k := range slices.Sorted(maps.Keys(p.Memory.FormatEfficiency)) {
				q := p.Memory.FormatEfficiency[k]
				rows = append(rows, Row{formatEfficiencyPath + "." + k, q.Value, q.Source})
			}
		}
		if f.path == "compute.flops" {
			for _, k := range slices.SortedFunc(maps.Keys(p.Compute.PassScale), byNumber) {
				q := p.Compute.PassScale[k]
				rows = append(rows, Row{passScalePath + "." + k, q.Value, q.Source})
			}
		}
	}
	for _, c := range []struct {
		path string
		pts  []CurveSample
	}{{"flash.single_lane", p.Flash.SingleLane}, {"flash.aggregate", p.Flash.Aggregate}} {
		for i, pt := range c.pts {
			v := pt.Bandwidth + " @ " + pt.Read
			switch strings.TrimSpace(pt.Lanes) {
			case "":
			case "1":
				v += " × 1 lane"
			default:
				v += " × " + pt.Lanes + " lanes"
			}
			rows = append(rows, Row{fmt.Sprintf("%s[%d]", c.path, i), v, pt.Source})
		}
	}
	return rows
}

// WriteTable writes the profile as an aligned, human-readable table of
// (field, value, source) rows, preceded by its name, description and
// calibration note, as `lessim devices show` prints it.
func (p *Profile) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "device: %s\n", p.Name)
	if d := strings.TrimSpace(p.Description); d != "" {
		fmt.Fprintf(&b, "%s\n", d)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tVALUE\tSOURCE")
	for _, r := range p.Rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Field, r.Value, oneLine(r.Source))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := strings.TrimSpace(p.Calibration); c != "" {
		fmt.Fprintf(&b, "\ncalibration: %s\n", oneLine(c))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
