package sweep

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/traces"
)

// Point is one spec of an expanded grid.
type Point struct {
	// Index is the point's position in the expanded grid (0-based, stable:
	// the first axis varies slowest, values in file order, duplicates dropped).
	Index int
	// ID is the spec's stable hash: the point's identity in results.
	ID string
	// Spec is the point's spec as the grid gives it (not yet resolved).
	Spec experiment.Spec
	// Values are this point's value of each axis, in axis order; nil where
	// the value does not apply to the point (a parameter of another policy).
	Values []any
}

// maxPointProblems caps how many invalid points an error lists.
const maxPointProblems = 12

// MaxPoints is the most points a grid may have. Every run of a sweep (each
// shard too) expands the whole grid in memory, a spec per point, so a larger
// grid is refused before anything is expanded: split it into sweep files.
const MaxPoints = 1_000_000

// Expand lists the grid's points in a stable order: the product of the axes'
// values, the first axis varying slowest. A point whose spec equals an
// earlier point's (the same hash, e.g. a les threshold swept for a policy
// that has none) is kept once, at its first position. Every point is
// checked whole before anything runs: the spec (Validate) and the inputs it
// names (experiment.Inputs.CheckInputs: device names and files, models,
// trace files, each read once), the same code a run resolves them with.
// Every problem of an invalid point is reported (up to a cap), each once for
// all the points it fails, with the line of the value that gives it.
func (g *Grid) Expand() ([]Point, error) {
	n, err := g.size()
	if err != nil {
		return nil, err
	}
	in := &experiment.Inputs{}
	digests := map[string]string{}
	var points []Point
	seen := map[string]bool{}
	bad := newBadPoints(g, in)
	idx := make([]int, len(g.Axes))
	for range n {
		s, vals, errs := g.point(idx, in, digests)
		if errs != nil {
			bad.add(idx, errs)
		} else if id := s.Hash(); !seen[id] {
			seen[id] = true
			points = append(points, Point{Index: len(points), ID: id, Spec: s, Values: vals})
		}
		for a := len(idx) - 1; a >= 0; a-- { // odometer: last axis fastest
			if idx[a]++; idx[a] < len(g.Axes[a].Values) {
				break
			}
			idx[a] = 0
		}
	}
	if err := bad.err(); err != nil {
		return nil, err
	}
	return points, nil
}

// point builds and checks the spec at grid position idx, with each axis's
// value (nil where it does not apply). in keeps the inputs already checked
// and digests the trace files already hashed. The problems of an invalid
// point are listed one by one.
func (g *Grid) point(idx []int, in *experiment.Inputs, digests map[string]string) (experiment.Spec, []any, []error) {
	m := deepCopy(g.base).(map[string]any)
	vals := make([]any, len(g.Axes))
	for a, ax := range g.Axes {
		vals[a] = ax.Values[idx[a]]
		setPath(m, ax.Field, deepCopy(vals[a]))
	}
	dropInapplicable(m)
	for a, ax := range g.Axes {
		if !hasPath(m, ax.Field) {
			vals[a] = nil // dropped: the value does not apply to this point
		}
	}
	s, errs := checkSpec(m, in)
	if errs == nil {
		if err := pinTrace(&s, digests); err != nil {
			errs = []error{err}
		}
	}
	return s, vals, errs
}

// checkSpec decodes a point's spec and lists its problems: those Validate
// finds and those of the inputs it names (CheckInputs).
func checkSpec(m map[string]any, in *experiment.Inputs) (experiment.Spec, []error) {
	s, err := specOf(m)
	if err != nil {
		return s, []error{err}
	}
	errs := append(split(s.Validate()), split(in.CheckInputs(s))...)
	if errs == nil {
		canonicalCache(&s.Cache)
	}
	return s, errs
}

// canonicalCache spells a cache size one way (devices.CacheSize.String), so
// that one size written as 3GiB, 3072MiB or cache.bytes 3221225472 is one
// point. NB: bytes stated beside a size that disagrees with them are kept,
// for the run to refuse.
func canonicalCache(c *experiment.Cache) {
	size, err := devices.ParseCacheSize(c.Size)
	switch {
	case c.Size == "" && c.Bytes > 0:
		c.Size, c.Bytes = devices.CacheSize{Bytes: c.Bytes}.String(), 0
	case err != nil:
	case size.Bytes > 0 && (c.Bytes == 0 || c.Bytes == size.Bytes):
		c.Size, c.Bytes = size.String(), 0
	case c.Bytes == 0:
		c.Size = size.String()
	}
}

// split lists the errors an errors.Join holds (one level: a problem that is
// itself several, such as a device file's, stays one), or err alone.
func split(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// badPoints groups the problems of invalid points: each distinct problem
// is reported once, with how many points have it, the first of them, and
// the line of what gives it (a mistake in the base fails every point the
// same way and is one problem, at the base's line).
type badPoints struct {
	g     *Grid
	in    *experiment.Inputs
	order []string
	byMsg map[string]*badGroup
	base  map[string]bool // the base's own problems, found on first use
}

// badGroup is the points that share one problem.
type badGroup struct {
	first []int   // the first point's grid position
	n     int     // points with the problem
	vals  [][]int // per axis, the value indices of those points (up to two distinct)
}

func newBadPoints(g *Grid, in *experiment.Inputs) *badPoints {
	return &badPoints{g: g, in: in, byMsg: map[string]*badGroup{}}
}

// add records the problems of the point at idx.
func (b *badPoints) add(idx []int, errs []error) {
	for _, err := range errs {
		msg := oneLine(err)
		grp, ok := b.byMsg[msg]
		if !ok {
			grp = &badGroup{first: slices.Clone(idx), vals: make([][]int, len(idx))}
			b.byMsg[msg] = grp
			b.order = append(b.order, msg)
		}
		grp.n++
		for a, v := range idx {
			if len(grp.vals[a]) < 2 && !slices.Contains(grp.vals[a], v) {
				grp.vals[a] = append(grp.vals[a], v)
			}
		}
	}
}

// err lists the problems, or is nil when every point is valid.
func (b *badPoints) err() error {
	probs := &Problems{Name: b.g.Name}
	for k, msg := range b.order {
		grp := b.byMsg[msg]
		switch {
		case k == maxPointProblems:
			probs.add(0, "%d more kinds of invalid points", len(b.order)-maxPointProblems)
		case k > maxPointProblems:
		case grp.n == 1:
			probs.add(b.line(msg, grp), "point %s: %s", b.g.describe(grp.first), msg)
		default:
			probs.add(b.line(msg, grp), "%d points, e.g. %s: %s", grp.n, b.g.describe(grp.first), msg)
		}
	}
	return probs.err()
}

// line is the line to report a problem at: the base's when the base alone
// (no axis values) has it; else the value of the first axis that gives all
// the points with the problem one value while other values do not give it
// (an axis of one value last); else the first point's last value.
func (b *badPoints) line(msg string, grp *badGroup) int {
	if b.base == nil {
		b.base = map[string]bool{}
		m := deepCopy(b.g.base).(map[string]any)
		dropInapplicable(m)
		_, errs := checkSpec(m, b.in)
		for _, err := range errs {
			b.base[oneLine(err)] = true
		}
	}
	if b.base[msg] && b.g.baseLine > 0 {
		return b.g.baseLine
	}
	for _, many := range []bool{true, false} {
		for a, ax := range b.g.Axes {
			if (len(ax.Values) > 1) == many && len(grp.vals[a]) == 1 {
				return ax.ValueLines[grp.vals[a][0]]
			}
		}
	}
	last := len(grp.first) - 1
	return b.g.Axes[last].ValueLines[grp.first[last]]
}

// size is the number of points of the grid before duplicates are dropped:
// the product of the axes' lengths. An axis without values (an empty grid)
// or a product above MaxPoints is a problem, found without overflow.
func (g *Grid) size() (int, error) {
	probs := &Problems{Name: g.Name}
	lens := make([]string, len(g.Axes))
	n, total := 1, 1.0
	for i, ax := range g.Axes {
		k := len(ax.Values)
		if k == 0 {
			probs.add(ax.Line, "empty grid: axis %s has no values", ax.Field)
			return 0, probs
		}
		lens[i] = strconv.Itoa(k)
		total *= float64(k)
		if n <= MaxPoints {
			n *= k // NB: at most MaxPoints × an axis's length: no overflow
		}
	}
	if n > MaxPoints {
		probs.add(g.Axes[0].Line, "axes: the grid has %.4g points (%s): more than the %d a sweep expands; split it into several sweep files",
			total, strings.Join(lens, " × "), MaxPoints)
		return 0, probs
	}
	return n, nil
}

// describe names a grid position by its axis values and their lines.
func (g *Grid) describe(idx []int) string {
	parts := make([]string, len(g.Axes))
	for a, ax := range g.Axes {
		js, _ := json.Marshal(ax.Values[idx[a]])
		parts[a] = fmt.Sprintf("%s=%s (line %d)", ax.Field, js, ax.ValueLines[idx[a]])
	}
	return strings.Join(parts, ", ")
}

// oneLine joins a multi-line error into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// specOf decodes a JSON-shaped map into a Spec as experiment.Parse does:
// unknown fields refused, absent groups at their defaults.
func specOf(m map[string]any) (experiment.Spec, error) {
	js, err := json.Marshal(m)
	if err != nil {
		return experiment.Spec{}, err
	}
	return experiment.Parse(js)
}

// dropInapplicable removes the parameter groups of policies other than the
// point's own: a grid crossing policy.name with policy.les.threshold gives
// lru points no threshold (they then collapse to one point per cache size).
// A stated predictor goes too where nothing reads its lookahead scores
// (every policy but les, and les with no_prefetch).
func dropInapplicable(m map[string]any) {
	pol, ok := m["policy"].(map[string]any)
	if !ok {
		return
	}
	name, _ := pol["name"].(string)
	for group, owner := range map[string]string{"les": "les", "pinned_hot": "pinned-hot"} {
		if name != owner {
			delete(pol, group)
		}
	}
	les, _ := pol["les"].(map[string]any)
	if noPrefetch, _ := les["no_prefetch"].(bool); name != "les" || noPrefetch {
		delete(m, "predictor")
	}
}

// pinTrace fills a trace file's SHA-256 (read once per path) so that the
// point's hash changes when the file's bytes do.
func pinTrace(s *experiment.Spec, digests map[string]string) error {
	p := s.Trace.Path
	if p == "" || s.Trace.SHA256 != "" {
		return nil
	}
	d, ok := digests[p]
	if !ok {
		var err error
		if d, err = traces.FileSHA256(p); err != nil { // NB: the digest Resolve takes
			return fmt.Errorf("trace: %w", err)
		}
		digests[p] = d
	}
	s.Trace.SHA256 = d
	return nil
}

// hasPath reports whether the dotted path is set in m.
func hasPath(m map[string]any, path string) bool {
	var v any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = mm[p]; !ok {
			return false
		}
	}
	return true
}

// setPath sets the dotted path in m, creating mappings on the way.
func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// deepCopy copies the maps and slices of a decoded YAML value.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := maps.Clone(v)
		for k, e := range out {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
