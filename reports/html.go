package reports

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/lessim/lessim/internal/atomicfile"
)

// ReportFile is the name of the HTML page WriteReport writes.
const ReportFile = "report.html"

// Report is what WriteReport wrote.
type Report struct {
	// Files are the files written (plots as PNG and SVG, then the page).
	Files []string
	// Drawn are the plots drawn; Skipped the ones left out, with the reason.
	Drawn   []string
	Skipped []SkippedPlot
	// Simulated, Failed and Measured count the table's rows: simulated rows
	// that ran, simulated rows whose error is set, measured rows.
	Simulated, Failed, Measured int
}

// SkippedPlot is a plot the rows did not allow, and why.
type SkippedPlot struct{ Name, Title, Reason string }

// WriteReport draws every plot the table allows into out (NAME.png and
// NAME.svg, written atomically) and writes out/report.html: a self-contained
// page (plots embedded as data URIs) with the plots, the plots not drawn and
// why, the settings shared by every row, and a table of the rows. source is
// named on the page (e.g. the results folder).
func WriteReport(t *Table, source, out string) (*Report, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("report folder: %w", err)
	}
	d := newSweepData(t)
	rep := &Report{Simulated: len(d.sim), Failed: len(d.failed), Measured: len(d.meas)}
	page := pageData{Source: source, Files: len(t.Files), Rows: t.Len(), Simulated: rep.Simulated, Failed: rep.Failed, Measured: rep.Measured}
	for _, f := range d.figures() {
		if f.skip != "" {
			rep.Skipped = append(rep.Skipped, SkippedPlot{f.name, f.title, f.skip})
			page.Skipped = append(page.Skipped, SkippedPlot{f.name, f.title, f.skip})
			continue
		}
		var png []byte
		for _, format := range []string{"png", "svg"} {
			data, err := f.render(format)
			if err != nil {
				return rep, fmt.Errorf("plot %s: %w", f.name, err)
			}
			path := filepath.Join(out, f.name+"."+format)
			if err := atomicfile.WriteFile(path, data); err != nil {
				return rep, err
			}
			rep.Files = append(rep.Files, path)
			if format == "png" {
				png = data
			}
		}
		rep.Drawn = append(rep.Drawn, f.name)
		page.Figures = append(page.Figures, pageFigure{
			Name: f.name, Title: f.title, Caption: f.caption,
			// NB: an attribute, not a URL: html/template would write each
			// base64 "+" as "&#43;".
			Src: template.HTMLAttr(`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(png) + `"`),
		})
	}
	page.Constant = d.constantTable()
	page.Head, page.Body = d.rowTable()
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, page); err != nil {
		return rep, err
	}
	path := filepath.Join(out, ReportFile)
	if err := atomicfile.WriteFile(path, b.Bytes()); err != nil {
		return rep, err
	}
	rep.Files = append(rep.Files, path)
	return rep, nil
}

type pageData struct {
	Source                                   string
	Files, Rows, Simulated, Failed, Measured int
	Figures                                  []pageFigure
	Skipped                                  []SkippedPlot
	Constant                                 [][2]string
	Head                                     []string
	Body                                     [][]string
}

type pageFigure struct {
	Name, Title, Caption string
	Src                  template.HTMLAttr
}

// constantTable lists the spec fields every simulated row shares.
func (d *sweepData) constantTable() [][2]string {
	var out [][2]string
	for _, n := range d.constant {
		out = append(out, [2]string{n, d.t.Str(n, d.sim[0])})
	}
	return out
}

// tableMetrics are the result columns the row table shows, with headers and
// a formatter each.
var tableMetrics = []struct {
	head, col string
	scale     float64
	prec      int
}{
	{"tokens/s", "tokens_per_sec", 1, 2},
	{"hit rate", "hit_rate", 1, 3},
	{"p50 ms", "latency_p50_ns", 1e-6, 1},
	{"p99 ms", "latency_p99_ns", 1e-6, 1},
	{"stall ms", "stall_ns", 1e-6, 0},
	{"flash MiB/token", "flash_bytes_per_token", 1.0 / (1 << 20), 1},
	{"cache", "cache_bytes", 0, 0},
}

// RowTable is the table of rows report.html ends with: per row its point
// index, source, the spec fields that vary among the rows, the main metrics
// (tokens/s, hit rate, p50 and p99 latency, stall, flash bytes per token,
// cache) and the error, in point order.
func RowTable(t *Table) (head []string, body [][]string) { return newSweepData(t).rowTable() }

// rowTable is every row: point, source, the varying spec fields, the main
// metrics and the error, sorted by point index then source.
func (d *sweepData) rowTable() ([]string, [][]string) {
	rows := slices.Concat(d.sim, d.failed, d.meas)
	slices.SortStableFunc(rows, func(a, b int) int {
		x, _ := d.num("point_index", a)
		y, _ := d.num("point_index", b)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
		return boolCmp(d.t.Str(colSource, a) != sourceMeasured, d.t.Str(colSource, b) != sourceMeasured)
	})
	head := []string{"point", "source"}
	head = append(head, d.varying...)
	for _, m := range tableMetrics {
		head = append(head, m.head)
	}
	head = append(head, "error")
	var body [][]string
	for _, i := range rows {
		r := []string{d.t.Str("point_index", i), d.t.Str(colSource, i)}
		for _, n := range d.varying {
			r = append(r, d.t.Str(n, i))
		}
		for _, m := range tableMetrics {
			v, ok := d.num(m.col, i)
			switch {
			case !ok:
				r = append(r, "")
			case m.scale == 0:
				r = append(r, cacheText(v))
			default:
				r = append(r, strconv.FormatFloat(v*m.scale, 'f', m.prec, 64))
			}
		}
		body = append(body, append(r, d.t.Str(colError, i)))
	}
	return head, body
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>lessim report: {{.Source}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
figure { margin: 2em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.95em; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; }
td.text { text-align: left; }
</style>
</head>
<body>
<h1>lessim report</h1>
<p id="summary">{{.Rows}} rows from {{.Files}} Parquet file(s) in <code>{{.Source}}</code>: {{.Simulated}} simulated, {{.Failed}} failed, {{.Measured}} measured.</p>
{{range .Figures}}
<figure id="fig-{{.Name}}">
<h2>{{.Title}}</h2>
<img {{.Src}} alt="{{.Title}}">
<figcaption>{{.Caption}} Files: <a href="{{.Name}}.png">{{.Name}}.png</a>, <a href="{{.Name}}.svg">{{.Name}}.svg</a>.</figcaption>
</figure>
{{end}}
{{if .Skipped}}
<h2>Plots not drawn</h2>
<ul id="skipped">
{{range .Skipped}}<li>{{.Title}}: {{.Reason}}.</li>
{{end}}</ul>
{{end}}
{{if .Constant}}
<h2>Settings shared by every run</h2>
<details><summary>{{len .Constant}} spec fields</summary>
<table>
{{range .Constant}}<tr><td class="text">{{index . 0}}</td><td class="text">{{index . 1}}</td></tr>
{{end}}</table>
</details>
{{end}}
<h2>Rows</h2>
<div style="overflow-x: auto">
<table id="rows">
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Body}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
</div>
</body>
</html>
`))
