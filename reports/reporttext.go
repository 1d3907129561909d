package reports

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/lessim/lessim/internal/plural"
)

// WriteRowText writes the rows table of report.html (RowTable) as aligned
// text: spec fields without their "spec." prefix, an empty cell as "-".
func WriteRowText(w io.Writer, t *Table) error {
	head, body := RowTable(t)
	for i := range head {
		head[i] = strings.TrimPrefix(head[i], "spec.")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range body {
		for i := range r {
			if r[i] == "" {
				r[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// WriteText says what WriteReport read from source (t) and wrote to out:
// the rows, the plots drawn, those skipped and why, and the page.
func (rep *Report) WriteText(w io.Writer, t *Table, source, out string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "read\t%s from %s in %s (%d simulated, %d failed, %d measured)\n",
		plural.Count(t.Len(), "row"), plural.Count(len(t.Files), "file"), source, rep.Simulated, rep.Failed, rep.Measured)
	if len(rep.Drawn) > 0 {
		fmt.Fprintf(tw, "drew\t%s (.png and .svg)\n", strings.Join(rep.Drawn, ", "))
	}
	for i, s := range rep.Skipped {
		key := ""
		if i == 0 {
			key = "skipped"
		}
		fmt.Fprintf(tw, "%s\t%s: %s\n", key, s.Name, s.Reason)
	}
	fmt.Fprintf(tw, "wrote\t%s\n", filepath.Join(out, ReportFile))
	return tw.Flush()
}
