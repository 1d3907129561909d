package ablation

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lessim/lessim/sim"
)

// label is a row's name in tables: "(n) label", reference rows "ref label",
// leave-one-out rows "w/o (k) label of step k".
func (r *Row) label() string {
	if r.Step.Without != "" {
		return fmt.Sprintf("w/o (%d) %s", r.Step.omits, strings.TrimPrefix(r.Step.Label, "w/o "))
	}
	if r.Step.Of != "" {
		return fmt.Sprintf("(%d) %s", r.Step.omits, r.Step.Label)
	}
	if r.Step.Reference {
		return "ref " + r.Step.Label
	}
	return fmt.Sprintf("(%d) %s", r.Order, r.Step.Label)
}

// WriteTable prints the ablation as an aligned table: per step tokens/s,
// speedup over the previous step and over the first, stall share, hit rate
// and flash bytes per token; then notes on skipped steps and the reference
// row, and every warning of the runs once, with the steps it concerns.
func WriteTable(w io.Writer, a *Ablation) error {
	first := a.Rows[0].Outcome
	fmt.Fprintf(w, "LES ablation: %s on %s, expert cache %s\n", first.Model.Name, first.Device.Name, sim.FormatBytes(first.Spec.Cache.Bytes))
	fmt.Fprintf(w, "trace: %s\n\n", first.TraceLabel)
	cells := [][]string{{"step", "tok/s", "vs prev", "vs stock", "stall", "hit rate", "flash/token"}}
	for i := range a.Rows {
		r := &a.Rows[i]
		if r.Outcome == nil {
			cells = append(cells, []string{r.label(), "skipped", "", "", "", "", ""})
			continue
		}
		res := r.Outcome.Result
		cells = append(cells, []string{r.label(), fmt.Sprintf("%.2f", res.TokensPerSec), times(r.VsPrevious), times(r.VsBaseline),
			share(res.StallNS, res.TimeNS), fmt.Sprintf("%.3f", res.HitRate), sim.FormatBytes(int64(res.FlashBytesPerToken))})
	}
	writeCells(w, cells)
	var notes []string
	without := -1 // the last step, when there are leave-one-out rows
	reuse := -1   // the first sensitivity row
	for i := range a.Rows {
		r := &a.Rows[i]
		switch {
		case r.Skipped != "":
			notes = append(notes, fmt.Sprintf("%s skipped: %s", r.tag(), r.Skipped))
		case r.Step.Without != "":
			without = r.Prev
		case r.Step.Of != "":
			if reuse < 0 {
				reuse = i
			}
		case r.Step.Reference:
			notes = append(notes, fmt.Sprintf("ref: %s", r.Step.About))
		}
	}
	if reuse >= 0 {
		r := &a.Rows[reuse]
		notes = append(notes, fmt.Sprintf("(%d) draft reuse R: step (%d) with each rejected draft's expert slots repeating an expert of the token before it with probability R on every layer (step (%d) itself: each layer's measured decode reuse); its vs prev is over %s: step (%d)'s gain from drafts routed independently of that token (0) to sharing its experts (1)",
			r.Step.omits, r.Step.omits, r.Step.omits, a.Rows[r.Prev].tag(), r.Step.omits))
	}
	if without >= 0 {
		notes = append(notes, fmt.Sprintf("w/o (k): step %s's settings without step k's changes, every other step's applied in order; its vs prev is over %s",
			a.Rows[without].tag(), a.Rows[without].tag()))
	}
	if first.Spec.Model == nil {
		notes = append(notes, traceQuantNote(a))
	}
	notes = append(notes, "vs prev: tokens/s over the step before that ran; vs stock: over step (1)")
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	writeWarnings(w, a)
	return nil
}

// traceQuantNote says which quant a trace file's steps ran with: the
// trace's own (its metadata's variant), and from which step on the experts
// were re-quantized.
func traceQuantNote(a *Ablation) string {
	own := a.Rows[0].Outcome.Model.Variant
	if own == "" {
		own = "unstated"
	}
	for i := range a.Rows {
		r := &a.Rows[i]
		if o := r.Outcome; o != nil && o.Spec.ExpertQuant != "" && !r.Step.Reference {
			return fmt.Sprintf("quant: %s from the trace's metadata; from step (%d) on, its experts re-quantized to %s (expert_quant: the same routing, each expert's bytes in %s)",
				own, r.Order, o.Spec.ExpertQuant, o.Spec.ExpertQuant)
		}
	}
	return fmt.Sprintf("quant: %s in every step that ran, from the trace's metadata", own)
}

// writeCells prints cells with the first column left-aligned and the others
// right-aligned, two spaces apart (widths in runes: labels hold α and ×).
func writeCells(w io.Writer, cells [][]string) {
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for j, c := range row {
			width[j] = max(width[j], utf8.RuneCountInString(c))
		}
	}
	for _, row := range cells {
		var b strings.Builder
		for j, c := range row {
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(c))
			if j == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// writeWarnings prints each distinct warning of the runs once, in order of
// first appearance, with the rows it came from.
func writeWarnings(w io.Writer, a *Ablation) {
	var order []string
	from := map[string][]string{}
	for i := range a.Rows {
		r := &a.Rows[i]
		if r.Outcome == nil {
			continue
		}
		for _, s := range r.Outcome.Result.Warnings {
			if _, ok := from[s]; !ok {
				order = append(order, s)
			}
			from[s] = append(from[s], r.tag())
		}
	}
	if len(order) == 0 {
		return
	}
	ran := 0
	for i := range a.Rows {
		if a.Rows[i].Outcome != nil {
			ran++
		}
	}
	fmt.Fprintln(w, "\nwarnings:")
	for _, s := range order {
		steps := "every step"
		if len(from[s]) < ran {
			steps = strings.Join(from[s], ", ")
		}
		fmt.Fprintf(w, "  - %s (%s)\n", s, steps)
	}
}

// tag is the row's short name: (n), ref, or w/o (k).
func (r *Row) tag() string {
	if r.Step.Without != "" {
		return fmt.Sprintf("w/o (%d)", r.Step.omits)
	}
	if r.Step.Reference {
		return "ref"
	}
	return fmt.Sprintf("(%d)", r.Order)
}

// WriteExplain prints each step's settings and what changed from the step
// before, both from the resolved specs: the fields every step shares once,
// then per step the fields that vary across steps (those it has) and
// the spec diff.
func WriteExplain(w io.Writer, a *Ablation) error {
	common, varying := split(a.Rows)
	fmt.Fprintln(w, "settings common to every step (from the resolved specs):")
	profile := 0
	for _, l := range common {
		if Under(l.Path, "device.profile") {
			profile++
			continue
		}
		fmt.Fprintf(w, "  %s = %s\n", l.Path, l.Value)
	}
	if profile > 0 {
		fmt.Fprintf(w, "  device.profile: %d values inline (see --format json)\n", profile)
	}
	for i := range a.Rows {
		r := &a.Rows[i]
		fmt.Fprintf(w, "\n%s\n  %s\n", r.label(), r.Step.About)
		if r.Outcome == nil {
			fmt.Fprintf(w, "  skipped: %s\n", r.Skipped)
			continue
		}
		fmt.Fprintf(w, "  spec %s\n", r.Outcome.Hash)
		fmt.Fprintln(w, "  settings:")
		vals := map[string]string{}
		for _, l := range r.Leaves {
			vals[l.Path] = l.Value
		}
		for _, p := range varying {
			if v, ok := vals[p]; ok {
				fmt.Fprintf(w, "    %s = %s\n", p, v)
			}
		}
		switch {
		case r.Prev < 0:
			fmt.Fprintln(w, "  the baseline: every later step is compared with it")
		default:
			fmt.Fprintf(w, "  changed from %s:\n", a.Rows[r.Prev].tag())
			for _, d := range r.Changes {
				fmt.Fprintf(w, "    %s\n", d)
			}
		}
	}
	return nil
}

// split divides the leaves of the rows that ran into those equal in every
// row (in the first row's order) and the paths that vary, absent from some
// row or different in one (in order of first appearance).
func split(rows []Row) (common []Leaf, varying []string) {
	value := map[string]string{}
	count := map[string]int{}
	vary := map[string]bool{}
	ran := 0
	for i := range rows {
		if rows[i].Outcome == nil {
			continue
		}
		ran++
		for _, l := range rows[i].Leaves {
			if v, ok := value[l.Path]; ok && v != l.Value {
				vary[l.Path] = true
			}
			value[l.Path] = l.Value
			count[l.Path]++
		}
	}
	for i := range rows {
		for _, l := range rows[i].Leaves {
			if vary[l.Path] || count[l.Path] < ran {
				if !slices.Contains(varying, l.Path) {
					varying = append(varying, l.Path)
				}
			} else if i == 0 {
				common = append(common, l)
			}
		}
	}
	return common, varying
}

func times(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", x)
}

func share(a, b int64) string {
	if b == 0 {
		return "0.0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}
