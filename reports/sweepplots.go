package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	gpalette "gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lessim/lessim/internal/plural"
)

// figure is one drawn plot, or why it was not drawn.
type figure struct {
	name, title string
	caption     string
	skip        string // non-empty: not drawn, and why
	p           *plot.Plot
	w, h        vg.Length
}

// maxCurves caps the curves of the latency CDF and the bars of the stall
// breakdown (beyond it a plot would be unreadable).
const maxCurves = 12

// figures draws every report plot that the rows allow, in page order.
func (d *sweepData) figures() []figure {
	return []figure{
		d.metricVsCache("throughput", "Tokens per second vs cache size", "tokens_per_sec", "decode tokens/s"),
		d.heatmap(),
		d.metricVsCache("hit-rate", "Hit rate vs cache size", "hit_rate", "hit rate (resident when needed)"),
		d.latencyCDF(),
		d.stallBars(),
		d.ablationBars(),
		d.predictedVsMeasured(),
	}
}

func skipped(name, title, why string) figure { return figure{name: name, title: title, skip: why} }

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// metricVsCache draws one line per series (policy and other varying fields)
// of a metric against the cache size in GiB.
func (d *sweepData) metricVsCache(name, title, col, ylabel string) figure {
	if len(d.sim) == 0 {
		return skipped(name, title, "no simulated rows ran")
	}
	if !d.varies(colCacheBytes, d.sim) {
		return skipped(name, title, "the cache size does not vary")
	}
	p := newPlot(title, "expert cache (GiB)", ylabel)
	labels, groups := d.series(d.sim)
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for g, rows := range groups {
		var xys plotter.XYs
		for _, i := range d.sortedByNum(rows, colCacheBytes) {
			x, okx := d.num(colCacheBytes, i)
			y, oky := d.num(col, i)
			if okx && oky {
				xys = append(xys, plotter.XY{X: x / (1 << 30), Y: y})
				xmin, xmax, ymax = min(xmin, x/(1<<30)), max(xmax, x/(1<<30)), max(ymax, y)
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return skipped(name, title, err.Error())
		}
		l.Color, s.Color = plotColor(g), plotColor(g)
		l.Dashes = dashes(g)
		s.Shape = shape(g)
		p.Add(l, s)
		p.Legend.Add(labels[g], l, s)
	}
	if col == "hit_rate" {
		ymax = 1
	}
	p.X.Min, p.X.Max = xmin-0.02*(xmax-xmin), xmax+0.02*(xmax-xmin)
	// NB: headroom for the legend (top left), one line per series.
	p.Y.Min, p.Y.Max = 0, ymax*(1.1+0.06*float64(len(labels)))
	p.Legend.Top, p.Legend.Left = true, true
	return figure{name: name, title: title, p: p, w: 8 * vg.Inch, h: 5 * vg.Inch,
		caption: fmt.Sprintf("%s of each simulated point; one line per %s.", ylabel, seriesWhat(labels)) + oracleNote(labels)}
}

// OracleNote is what every plot or table showing the oracle policy says about it.
const OracleNote = "oracle is Belady eviction plus perfect one-layer-ahead prefetch: a hit-rate reference, not a throughput bound."

// oracleNote is " "+OracleNote when a series label shows the oracle policy.
func oracleNote(labels []string) string {
	for _, l := range labels {
		if slices.Contains(strings.FieldsFunc(l, func(r rune) bool { return r == ',' || r == ' ' || r == '=' }), "oracle") {
			return " " + OracleNote
		}
	}
	return ""
}

func seriesWhat(labels []string) string {
	if len(labels) == 1 {
		return "run"
	}
	return "combination of the fields that vary (besides the cache)"
}

// dashes and shape tell series apart beyond the five colours.
func dashes(g int) []vg.Length {
	if (g/len(palette))%2 == 1 {
		return []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return nil
}

func shape(g int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}
	return shapes[(g/len(palette))%len(shapes)]
}

// heatGrid is tokens/s on a cache × threshold grid (NaN where no row is).
type heatGrid struct {
	xs, ys []float64
	z      [][]float64 // [x][y]
}

func (g *heatGrid) Dims() (int, int)   { return len(g.xs), len(g.ys) }
func (g *heatGrid) Z(c, r int) float64 { return g.z[c][r] }
func (g *heatGrid) X(c int) float64    { return float64(c) }
func (g *heatGrid) Y(r int) float64    { return float64(r) }
func (g *heatGrid) Min() (m float64)   { return g.reduce(math.Inf(1), math.Min) }
func (g *heatGrid) Max() (m float64)   { return g.reduce(math.Inf(-1), math.Max) }
func (g *heatGrid) reduce(init float64, f func(a, b float64) float64) float64 {
	m := init
	for _, col := range g.z {
		for _, v := range col {
			if !math.IsNaN(v) {
				m = f(m, v)
			}
		}
	}
	return m
}

// heatmap draws tokens/s over cache size × les recall threshold, averaged
// over any other varying field (the caption says which).
func (d *sweepData) heatmap() figure {
	const name, title = "heatmap", "Tokens per second by cache size and recall threshold"
	var rows []int
	for _, i := range d.sim {
		if v, ok := d.num(colThreshold, i); ok && v > 0 {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 || !d.varies(colThreshold, rows) || !d.varies(colCacheBytes, rows) {
		return skipped(name, title, "needs les rows where both the cache size and policy.les.threshold vary")
	}
	g := &heatGrid{}
	for _, i := range rows {
		x, _ := d.num(colCacheBytes, i)
		y, _ := d.num(colThreshold, i)
		if !slices.Contains(g.xs, x) {
			g.xs = append(g.xs, x)
		}
		if !slices.Contains(g.ys, y) {
			g.ys = append(g.ys, y)
		}
	}
	slices.Sort(g.xs)
	slices.Sort(g.ys)
	sum := make([][]float64, len(g.xs))
	cnt := make([][]int, len(g.xs))
	for c := range g.xs {
		sum[c], cnt[c] = make([]float64, len(g.ys)), make([]int, len(g.ys))
	}
	for _, i := range rows {
		x, _ := d.num(colCacheBytes, i)
		y, _ := d.num(colThreshold, i)
		v, ok := d.num("tokens_per_sec", i)
		if ok {
			c, r := slices.Index(g.xs, x), slices.Index(g.ys, y)
			sum[c][r] += v
			cnt[c][r]++
		}
	}
	g.z = make([][]float64, len(g.xs))
	for c := range g.xs {
		g.z[c] = make([]float64, len(g.ys))
		for r := range g.ys {
			g.z[c][r] = math.NaN()
			if cnt[c][r] > 0 {
				g.z[c][r] = sum[c][r] / float64(cnt[c][r])
			}
		}
	}
	p := newPlot(title, "expert cache", "les recall threshold")
	pal := gpalette.Heat(12, 1)
	hm := plotter.NewHeatMap(g, pal)
	hm.NaN = color.RGBA{220, 220, 220, 255}
	if hm.Min == hm.Max {
		hm.Max = hm.Min + 1
	}
	p.Add(hm)
	for c := range g.xs {
		for r := range g.ys {
			if !math.IsNaN(g.z[c][r]) {
				l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: float64(c), Y: float64(r)}},
					Labels: []string{strconv.FormatFloat(g.z[c][r], 'f', 2, 64)}})
				if err == nil {
					l.TextStyle[0].XAlign, l.TextStyle[0].YAlign = draw.XCenter, draw.YCenter
					p.Add(l)
				}
			}
		}
	}
	p.X.Tick.Marker = indexTicks(g.xs, cacheText)
	p.Y.Tick.Marker = indexTicks(g.ys, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
	p.X.Min, p.X.Max = -0.5, float64(len(g.xs))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(g.ys))-0.5
	caption := fmt.Sprintf("Mean decode tokens/s of the les points per cell (range %.2f–%.2f; grey: no point).", g.Min(), g.Max())
	var other []string
	for _, n := range d.varying {
		if n != colThreshold && n != colPolicy && d.varies(n, rows) {
			other = append(other, n)
		}
	}
	if len(other) > 0 {
		caption += fmt.Sprintf(" Averaged over %v, which also vary.", other)
	}
	return figure{name: name, title: title, p: p, w: 8 * vg.Inch, h: 5 * vg.Inch, caption: caption}
}

// indexTicks labels integer positions 0..len(vals)-1 with the values.
func indexTicks(vals []float64, format func(float64) string) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(vals))
	for i, v := range vals {
		t[i] = plot.Tick{Value: float64(i), Label: format(v)}
	}
	return t
}

// latencyCDF draws the per-token latency distribution of the rows at the
// middle cache size: from per-pass series when the rows kept them, else
// from the latency percentile columns (p50, p90, p99, max).
func (d *sweepData) latencyCDF() figure {
	const name, title = "latency-cdf", "Per-token latency distribution"
	if len(d.sim) == 0 {
		return skipped(name, title, "no simulated rows ran")
	}
	cache, rows := d.middleCache(d.sim)
	labels, groups := d.series(rows)
	p := newPlot(title, "per-token latency (ms)", "fraction of tokens at or below")
	xmax := 0.0
	fromSeries := 0
	drawn := 0
	for g, grp := range groups {
		if drawn == maxCurves {
			break
		}
		i := grp[0]
		xys, series := d.cdfPoints(i)
		if len(xys) == 0 {
			continue
		}
		if series {
			fromSeries++
		}
		for _, q := range xys {
			xmax = max(xmax, q.X)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return skipped(name, title, err.Error())
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Dashes = plotColor(g), dashes(g)
		p.Add(l)
		p.Legend.Add(labels[g], l)
		drawn++
	}
	if drawn == 0 {
		return skipped(name, title, "no row has latency percentiles")
	}
	p.X.Min, p.X.Max = 0, xmax*1.05
	p.Y.Min, p.Y.Max = 0, 1.02
	p.Legend.Top, p.Legend.Left = false, false
	src := "from the latency percentile columns (p50, p90, p99, max: a step curve through four points, not the full distribution)"
	if fromSeries == drawn {
		src = "from each run's per-pass series (time per emitted token)"
	} else if fromSeries > 0 {
		src = fmt.Sprintf("from per-pass series for %s, from the percentile columns (p50, p90, p99, max) for the others", plural.Count(fromSeries, "run"))
	}
	at := ""
	if cache > 0 {
		at = " at cache " + cacheText(cache)
	}
	caption := fmt.Sprintf("Runs%s, %s.", at, src)
	if len(groups) > drawn {
		caption += fmt.Sprintf(" The first %d of %d series are drawn.", drawn, len(groups))
	}
	caption += oracleNote(labels)
	return figure{name: name, title: title, p: p, w: 8 * vg.Inch, h: 5 * vg.Inch, caption: caption}
}

// cdfPoints is row i's latency CDF in ms, and whether it came from series.
func (d *sweepData) cdfPoints(i int) (plotter.XYs, bool) {
	if c := d.t.Column("series.time_ns"); c != nil && c.Kind == KindList && c.Valid[i] && len(c.List[i]) > 0 {
		acc := d.t.Column("series.accepted")
		var lat []float64
		for j, ns := range c.List[i] {
			a := 1.0
			if acc != nil && acc.Valid[i] && j < len(acc.List[i]) && acc.List[i][j] > 0 {
				a = acc.List[i][j]
			}
			lat = append(lat, ns/a/1e6)
		}
		slices.Sort(lat)
		xys := plotter.XYs{{X: 0, Y: 0}}
		for j, v := range lat {
			xys = append(xys, plotter.XY{X: v, Y: float64(j+1) / float64(len(lat))})
		}
		return xys, true
	}
	xys := plotter.XYs{{X: 0, Y: 0}}
	for _, q := range []struct {
		col string
		f   float64
	}{{"latency_p50_ns", 0.5}, {"latency_p90_ns", 0.9}, {"latency_p99_ns", 0.99}, {"latency_max_ns", 1}} {
		v, ok := d.num(q.col, i)
		if !ok {
			return nil, false
		}
		xys = append(xys, plotter.XY{X: v / 1e6, Y: q.f})
	}
	// Step at each percentile: below p50 the fraction is at most 0.5.
	out := plotter.XYs{xys[0]}
	for j := 1; j < len(xys); j++ {
		out = append(out, plotter.XY{X: xys[j].X, Y: xys[j-1].Y}, xys[j])
	}
	return out, false
}

// stallBars stacks each run's time per token: compute, stalled on flash
// reads, page-fault handling, and other stalls.
func (d *sweepData) stallBars() figure {
	const name, title = "stall-breakdown", "Where each token's time goes"
	if len(d.sim) == 0 {
		return skipped(name, title, "no simulated rows ran")
	}
	cache, rows := d.middleCache(d.sim)
	labels, groups := d.series(rows)
	n := min(len(groups), maxCurves)
	parts := []struct{ label, col string }{
		{"compute", "compute_ns"}, {"stalled on flash reads", "stall_flash_ns"}, {"page-fault handling", "stall_fault_cpu_ns"}, {"other stalls", ""},
	}
	vals := make([]plotter.Values, len(parts))
	for k := range parts {
		vals[k] = make(plotter.Values, n)
	}
	ymax := 0.0
	for g := range n {
		i := groups[g][0]
		tok, ok := d.num("tokens", i)
		if !ok || tok == 0 {
			continue
		}
		get := func(c string) float64 { v, _ := d.num(c, i); return v / tok / 1e6 }
		vals[0][g], vals[1][g], vals[2][g] = get("compute_ns"), get("stall_flash_ns"), get("stall_fault_cpu_ns")
		vals[3][g] = max(get("stall_ns")-vals[1][g]-vals[2][g], 0)
		ymax = max(ymax, vals[0][g]+vals[1][g]+vals[2][g]+vals[3][g])
	}
	p := newPlot(title, "", "ms per decode token")
	var below *plotter.BarChart
	for k, part := range parts {
		b, err := plotter.NewBarChart(vals[k], vg.Points(min(48, 360/float64(n))))
		if err != nil {
			return skipped(name, title, err.Error())
		}
		b.Color = plotColor(k)
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(part.label, b)
	}
	p.NominalX(labels[:n]...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.X.Min, p.X.Max = -0.6, float64(n)-0.4
	p.Y.Min, p.Y.Max = 0, ymax*1.3
	p.Legend.Top = true
	at := ""
	if cache > 0 {
		at = " at cache " + cacheText(cache)
	}
	return figure{name: name, title: title, p: p, w: 8 * vg.Inch, h: 5.5 * vg.Inch,
		caption: fmt.Sprintf("Decode time per token%s split into compute and stalls (stall_ns = flash wait + fault handling + other).", at) + oracleNote(labels)}
}

// ablationBars draws tokens/s per ablation step when rows carry step labels.
func (d *sweepData) ablationBars() figure {
	const name, title = "ablation", "Ablation: tokens per second by step"
	var rows []int
	for _, i := range d.sim {
		if d.t.Str(colAblation, i) != "" {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return skipped(name, title, "no row carries an ablation step label (column "+colAblation+")")
	}
	if d.t.Column(colAblationOrder) != nil {
		rows = d.sortedByNum(rows, colAblationOrder)
	}
	vals := make(plotter.Values, len(rows))
	labels := make([]string, len(rows))
	ymax := 0.0
	for k, i := range rows {
		vals[k], _ = d.num("tokens_per_sec", i)
		labels[k] = d.t.Str(colAblation, i)
		ymax = max(ymax, vals[k])
	}
	p := newPlot(title, "", "decode tokens/s")
	b, err := plotter.NewBarChart(vals, vg.Points(min(48, 360/float64(len(rows)))))
	if err != nil {
		return skipped(name, title, err.Error())
	}
	b.Color = plotColor(0)
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.X.Min, p.X.Max = -0.6, float64(len(rows))-0.4
	p.Y.Min, p.Y.Max = 0, ymax*1.2
	return figure{name: name, title: title, p: p, w: 8 * vg.Inch, h: 5 * vg.Inch,
		caption: "Decode tokens/s of each step, in step order."}
}

// predictedVsMeasured pairs measured rows with the simulated row of the same
// point (point_id, else run_hash) and plots measured against predicted tokens/s.
func (d *sweepData) predictedVsMeasured() figure {
	const name, title = "predicted-vs-measured", "Predicted vs measured tokens per second"
	if len(d.meas) == 0 {
		return skipped(name, title, "no measured rows (source = measured)")
	}
	pred := map[string]int{}
	for _, i := range d.sim {
		for _, c := range []string{colPointID, colRunHash} {
			if k := d.t.Str(c, i); k != "" {
				pred[c+k] = i
			}
		}
	}
	var xys plotter.XYs
	hi := 0.0
	for _, m := range d.meas {
		for _, c := range []string{colPointID, colRunHash} {
			i, ok := pred[c+d.t.Str(c, m)]
			if !ok || d.t.Str(c, m) == "" {
				continue
			}
			x, okx := d.num("tokens_per_sec", i)
			y, oky := d.num("tokens_per_sec", m)
			if okx && oky {
				xys = append(xys, plotter.XY{X: x, Y: y})
				hi = max(hi, x, y)
			}
			break
		}
	}
	if len(xys) == 0 {
		return skipped(name, title, "no measured row matches a simulated row's point_id or run_hash")
	}
	p := newPlot(title, "predicted decode tokens/s", "measured decode tokens/s")
	hi *= 1.1
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: hi, Y: hi}})
	if err != nil {
		return skipped(name, title, err.Error())
	}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	diag.Color = color.Gray{Y: 120}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return skipped(name, title, err.Error())
	}
	s.Color = plotColor(1)
	p.Add(diag, s)
	p.Legend.Add("y = x", diag)
	p.Legend.Add("measured run", s)
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, hi, 0, hi
	return figure{name: name, title: title, p: p, w: 6 * vg.Inch, h: 6 * vg.Inch,
		caption: fmt.Sprintf("%d measured runs against the prediction for the same spec; points on the dashed line are predicted exactly.", len(xys))}
}

// render encodes a figure in one format ("png" or "svg").
func (f *figure) render(format string) ([]byte, error) {
	wt, err := f.p.WriterTo(f.w, f.h, format)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
