package reports

import (
	"slices"
	"strings"

	"github.com/lessim/lessim/sim"
)

// Column names of a results table that the report reads (see sweep.Row and
// sim.Result); spec columns start with specPrefix.
const (
	specPrefix    = "spec."
	colCacheBytes = "cache_bytes"
	colPolicy     = "spec.policy.name"
	colThreshold  = "spec.policy.les.threshold"
	colSource     = "source"
	colError      = "error"
	colPointID    = "point_id"
	colRunHash    = "run_hash"
	colSweepID    = "sweep_id"
	// colAblation labels a row with its step of an ablation (e.g. "+ lookahead");
	// colAblationOrder, when present, orders the steps.
	colAblation      = "ablation_step"
	colAblationOrder = "ablation_order"
)

// sourceMeasured marks rows measured on a real engine (sim.SourceMeasured).
const sourceMeasured = "measured"

// sweepData is a results table split for the report: the simulated rows
// that ran, the measured rows, and which spec fields vary among them.
type sweepData struct {
	t         *Table
	sim, meas []int    // row indices
	failed    []int    // simulated rows whose error is set
	varying   []string // spec columns with more than one value among sim rows (labels)
	constant  []string // spec columns with one value
}

// labelSkip are spec columns never used to label a series: they vary only
// together with a field that is shown (a device profile with the device, a
// trace digest with its path) or are the x axis (cache).
var labelSkip = []string{"spec.device.profile.", "spec.trace.sha256", "spec.cache.", "spec.version"}

func newSweepData(t *Table) *sweepData {
	d := &sweepData{t: t}
	for i := range t.Len() {
		switch {
		case t.Str(colSource, i) == sourceMeasured:
			d.meas = append(d.meas, i)
		case t.Str(colError, i) != "":
			d.failed = append(d.failed, i)
		default:
			d.sim = append(d.sim, i)
		}
	}
	for _, n := range t.Names {
		if !strings.HasPrefix(n, specPrefix) {
			continue
		}
		if d.distinct(n, d.sim) > 1 {
			if !slices.ContainsFunc(labelSkip, func(p string) bool { return strings.HasPrefix(n, p) }) {
				d.varying = append(d.varying, n)
			}
		} else if len(d.sim) > 0 && t.Str(n, d.sim[0]) != "" {
			d.constant = append(d.constant, n)
		}
	}
	return d
}

// distinct counts the distinct non-null texts of column name over rows: a
// field only some rows have (a les parameter beside lru rows) varies only if
// the rows that have it disagree.
func (d *sweepData) distinct(name string, rows []int) int {
	seen := map[string]bool{}
	for _, i := range rows {
		if v := d.t.Str(name, i); v != "" {
			seen[v] = true
		}
	}
	return len(seen)
}

// varies reports whether a column takes more than one value over the rows.
func (d *sweepData) varies(name string, rows []int) bool { return d.distinct(name, rows) > 1 }

// series groups rows by the varying spec fields other than skip, in order
// of first appearance; each group's label names its values.
func (d *sweepData) series(rows []int, skip ...string) (labels []string, groups [][]int) {
	var keys []string
	idx := map[string]int{}
	for _, i := range rows {
		var parts []string
		for _, n := range d.varying {
			if slices.Contains(skip, n) || d.t.Str(n, i) == "" {
				continue // absent for this row (another policy's parameter)
			}
			parts = append(parts, d.shortLabel(n, i))
		}
		k := strings.Join(parts, ", ")
		g, ok := idx[k]
		if !ok {
			g = len(keys)
			idx[k] = g
			keys = append(keys, k)
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	for i, k := range keys {
		if k == "" {
			keys[i] = "all rows"
		}
	}
	return keys, groups
}

// shortLabel is "value" for the policy, "field value" for other fields
// (field = the last part of the column name).
func (d *sweepData) shortLabel(name string, i int) string {
	v := d.t.Str(name, i)
	if name == colPolicy {
		return v
	}
	return name[strings.LastIndex(name, ".")+1:] + " " + v
}

// num is a numeric column's value, NaN-free: ok is false when absent.
func (d *sweepData) num(name string, i int) (float64, bool) { return d.t.Num(name, i) }

// sortedByNum sorts rows by a numeric column (missing last), stably.
func (d *sweepData) sortedByNum(rows []int, name string) []int {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b int) int {
		x, okx := d.num(name, a)
		y, oky := d.num(name, b)
		switch {
		case !okx || !oky:
			return boolCmp(okx, oky)
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return out
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// middleCache is the cache size closest to the median of the rows' sizes
// and the rows at it (all rows when the cache does not vary).
func (d *sweepData) middleCache(rows []int) (float64, []int) {
	var sizes []float64
	for _, i := range rows {
		if v, ok := d.num(colCacheBytes, i); ok && !slices.Contains(sizes, v) {
			sizes = append(sizes, v)
		}
	}
	if len(sizes) <= 1 {
		if len(sizes) == 1 {
			return sizes[0], rows
		}
		return 0, rows
	}
	slices.Sort(sizes)
	mid := sizes[(len(sizes)-1)/2]
	var at []int
	for _, i := range rows {
		if v, _ := d.num(colCacheBytes, i); v == mid {
			at = append(at, i)
		}
	}
	return mid, at
}

// cacheText formats a cache size in bytes as the rest of lessim prints
// sizes (sim.FormatBytes: 3.00 GiB, 640.00 KiB), so a cache of a few MiB
// does not read "0 GiB".
func cacheText(b float64) string { return sim.FormatBytes(int64(b)) }
