package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/lessim/lessim/experiment"
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
// that has none) is kept once, at its first position. Every invalid point is
// reported (up to a cap) with the lines of the values that formed it.
func (g *Grid) Expand() ([]Point, error) {
	n, err := g.size()
	if err != nil {
		return nil, err
	}
	probs := &Problems{Name: g.Name}
	digests := map[string]string{}
	var points []Point
	seen := map[string]bool{}
	// Invalid points are grouped by their error: a mistake in the base
	// fails every point the same way and is reported once.
	type badGroup struct {
		line  int
		first string
		n     int
	}
	var badOrder []string
	bad := map[string]*badGroup{}
	idx := make([]int, len(g.Axes))
	for range n {
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
		s, err := specOf(m)
		if err == nil {
			err = pinTrace(&s, digests)
		}
		if err == nil {
			err = s.Validate()
		}
		if err != nil {
			msg := oneLine(err)
			if b, ok := bad[msg]; ok {
				b.n++
			} else {
				bad[msg] = &badGroup{line: g.Axes[len(idx)-1].ValueLines[idx[len(idx)-1]], first: g.describe(idx), n: 1}
				badOrder = append(badOrder, msg)
			}
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
	for k, msg := range badOrder {
		b := bad[msg]
		switch {
		case k == maxPointProblems:
			probs.add(0, "%d more kinds of invalid points", len(badOrder)-maxPointProblems)
		case k > maxPointProblems:
		case b.n == 1:
			probs.add(b.line, "point %s: %s", b.first, msg)
		default:
			probs.add(b.line, "%d points, e.g. %s: %s", b.n, b.first, msg)
		}
	}
	if err := probs.err(); err != nil {
		return nil, err
	}
	return points, nil
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
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("trace %s: %w", p, err)
		}
		d = hex.EncodeToString(h.Sum(nil))
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
