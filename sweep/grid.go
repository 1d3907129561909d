package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/textin"
	"github.com/lessim/lessim/internal/yamlin"
)

// Grid is a parsed sweep file: a base spec and the axes whose product is the
// set of points. Build one with ParseGrid or ReadGrid, then Expand it.
type Grid struct {
	// Name is the sweep file's name, used in messages.
	Name string
	// base is the base spec in its JSON shape (nested maps); baseLine its
	// line in the sweep file (0 when absent).
	base     map[string]any
	baseLine int
	// Axes are in file order; the first varies slowest.
	Axes []Axis
}

// Axis is one swept spec field and its values.
type Axis struct {
	// Field is the spec field's path: its JSON names joined by "." (e.g.
	// "policy.les.threshold").
	Field string
	// Values are the field's values in file order, in their JSON shape.
	Values []any
	// Line is the axis's line in the sweep file; ValueLines each value's.
	Line       int
	ValueLines []int
}

// Problems is every problem found in a sweep file, each with its line; its
// Error lists them one per line as "file:line: message".
type Problems struct {
	Name string
	List []Problem
}

// Problem is one problem of a sweep file.
type Problem struct {
	Line int // 0 when the problem has no single line (then it is about the file)
	Msg  string
}

// Error lists the problems, one per line, after a count.
func (p *Problems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problem", p.Name, len(p.List))
	if len(p.List) != 1 {
		b.WriteString("s")
	}
	for _, q := range p.List {
		b.WriteString("\n  ")
		if q.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: ", p.Name, q.Line)
		}
		b.WriteString(q.Msg)
	}
	return b.String()
}

func (p *Problems) add(line int, format string, a ...any) {
	p.List = append(p.List, Problem{Line: line, Msg: fmt.Sprintf(format, a...)})
}

// err is p as an error, or nil when there are no problems.
func (p *Problems) err() error {
	if len(p.List) == 0 {
		return nil
	}
	slices.SortStableFunc(p.List, func(a, b Problem) int { return a.Line - b.Line })
	return p
}

// specType is the type every path and value is checked against.
var specType = reflect.TypeFor[experiment.Spec]()

// MaxGridBytes bounds a sweep file (a grid of MaxPoints points is a few KiB
// of axes).
const MaxGridBytes = 4 << 20

// ReadGrid reads and parses the sweep file at path (see ParseGrid).
func ReadGrid(path string) (*Grid, error) {
	data, err := textin.ReadFile(path, "sweep file", MaxGridBytes, nil)
	if err != nil {
		return nil, err
	}
	return ParseGrid(data, filepath.Base(path))
}

// ParseGrid parses a sweep file:
//
//	base:            # an experiment spec, JSON field names
//	  model: {name: minicpm-v-4.7-35b-a3b}
//	  trace: {synthetic: {tokens: 2000}}
//	axes:            # spec field path: its values; the grid is their product
//	  policy.name: [oracle, lru, lfu]
//	  cache.size: [250MiB, 500MiB, 1GiB]
//
// Every problem is reported at once (a *Problems) with its line: a field
// that the spec does not have, a value of the wrong type, an axis without
// values, two axes over the same field, an unknown top-level key, and what
// yamlin.Parse refuses (a key written twice, a merge key, a second document).
func ParseGrid(data []byte, name string) (*Grid, error) {
	probs := &Problems{Name: name}
	doc, refused, err := yamlin.Parse(data, "sweep file")
	if err != nil {
		probs.add(0, "%v", err)
		return nil, probs
	}
	if doc == nil {
		probs.add(0, "empty sweep file: it needs base and axes")
		return nil, probs
	}
	for _, r := range refused {
		probs.add(r.Line, "%s", r)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		probs.add(root.Line, "a sweep file is a mapping with base and axes")
		return nil, probs
	}
	g := &Grid{Name: name, base: map[string]any{}}
	var baseNode, axesNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "base":
			baseNode, g.baseLine = v, k.Line
		case "axes":
			axesNode = v
		default:
			if slices.Contains(infoKeys, k.Value) {
				checkInfo(probs, k, v)
				continue
			}
			probs.add(k.Line, "unknown key %q (valid: base, axes)", k.Value)
		}
	}
	baseOK := true
	if baseNode != nil && !isNull(baseNode) {
		baseOK = checkValue(probs, baseNode, specType, "base")
		if err := baseNode.Decode(&g.base); err != nil {
			probs.add(baseNode.Line, "base: %v", err)
			baseOK = false
		}
	}
	if axesNode == nil || isNull(axesNode) {
		probs.add(root.Line, "no axes: a sweep needs at least one axis (for a single run use lessim simulate)")
		return nil, probs.err()
	}
	axes, usable := parseAxes(probs, axesNode)
	g.Axes = axes
	if len(probs.List) > 0 {
		if baseOK {
			(&Grid{Name: name, base: g.base, baseLine: g.baseLine, Axes: usable}).addPointProblems(probs)
		}
		return nil, probs.err()
	}
	if _, err := g.size(); err != nil {
		return nil, err
	}
	return g, nil
}

// addPointProblems adds to probs the problems of the points the grid's
// valid values form (Expand's), so that one report lists a malformed value
// and an out-of-range one alike. g holds only the usable axes (parseAxes)
// with their valid values: the values and axes already refused are left out
// of its points.
func (g *Grid) addPointProblems(probs *Problems) {
	if _, err := g.size(); err != nil {
		return
	}
	var ps *Problems
	if _, err := g.Expand(); errors.As(err, &ps) {
		probs.List = append(probs.List, ps.List...)
	}
}

// parseAxes reads the axes mapping, checking each path and value. Only the
// values that fit their field are kept. usable are the axes whose points
// can still be checked when the file has problems: known fields, not
// overlapping an earlier axis, with a list holding at least one valid value.
func parseAxes(probs *Problems, n *yaml.Node) (axes, usable []Axis) {
	if n.Kind != yaml.MappingNode {
		probs.add(n.Line, "axes: a mapping of spec field paths to lists of values")
		return nil, nil
	}
	if len(n.Content) == 0 {
		probs.add(n.Line, "axes: empty grid: no axis has values")
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ax := Axis{Field: k.Value, Line: k.Line}
		ok := true
		t, err := fieldType(ax.Field)
		if err != nil {
			probs.add(k.Line, "axes: %v", err)
			ok = false
		}
		// NB: an axis written twice is a duplicate key, reported by yamlin.Parse.
		seen[ax.Field] = k.Line
		for _, f := range slices.Sorted(maps.Keys(seen)) { // NB: sorted: one order of messages
			line := seen[f]
			if f != ax.Field && (strings.HasPrefix(f, ax.Field+".") || strings.HasPrefix(ax.Field, f+".")) {
				probs.add(k.Line, "axes: %s overlaps the axis %s on line %d", ax.Field, f, line)
				ok = false
			}
		}
		if v.Kind != yaml.SequenceNode {
			probs.add(v.Line, "axes: %s: values must be a list, e.g. [a, b]", ax.Field)
			ok = false
			continue
		}
		if len(v.Content) == 0 {
			probs.add(v.Line, "axes: %s: empty list of values: the grid would have no points", ax.Field)
		}
		for _, e := range v.Content {
			if t != nil && !checkValue(probs, e, t, ax.Field) {
				continue
			}
			var val any
			if err := e.Decode(&val); err != nil {
				probs.add(e.Line, "axes: %s: %v", ax.Field, err)
				continue
			}
			ax.Values = append(ax.Values, val)
			ax.ValueLines = append(ax.ValueLines, e.Line)
		}
		axes = append(axes, ax)
		if ok && len(ax.Values) > 0 {
			usable = append(usable, ax)
		}
	}
	return axes, usable
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// fieldType is the Go type of the spec field at a dotted JSON path.
func fieldType(path string) (reflect.Type, error) {
	t := specType
	parts := strings.Split(path, ".")
	for i, p := range parts {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		where := strings.Join(parts[:i], ".")
		if where == "" {
			where = "the spec"
		}
		if t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("unknown field %q: %s has no fields", path, where)
		}
		f, ok := structField(t, p)
		if !ok {
			return nil, fmt.Errorf("unknown field %q: %s has %s", path, where, strings.Join(fieldNames(t), ", "))
		}
		t = f.Type
	}
	return t, nil
}

// structField finds the field of struct type t whose JSON name is name.
func structField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if n, skip := jsonName(f); !skip && f.IsExported() && n == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldNames lists the JSON names of struct type t's fields.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if n, skip := jsonName(f); !skip && f.IsExported() {
			out = append(out, n)
		}
	}
	return out
}

// checkValue reports (with lines) every part of node n that does not fit Go
// type t: unknown fields of structs, by walking mappings field by field,
// numbers that are not finite (YAML's .nan and .inf; a spec is JSON), and
// values of the wrong type, by decoding them as encoding/json would. It
// reports whether n fits.
func checkValue(probs *Problems, n *yaml.Node, t reflect.Type, where string) bool {
	before := len(probs.List)
	checkNode(probs, n, t, where)
	return len(probs.List) == before
}

func checkNode(probs *Problems, n *yaml.Node, t reflect.Type, where string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if isNull(n) {
		return // absent: the field's zero value
	}
	if t.Kind() == reflect.Struct {
		if n.Kind != yaml.MappingNode {
			probs.add(n.Line, "%s: want a mapping with fields %s, got %s", where, strings.Join(fieldNames(t), ", "), describe(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := structField(t, k.Value)
			if !ok {
				probs.add(k.Line, "%s: unknown field %q (valid: %s)", where, k.Value, strings.Join(fieldNames(t), ", "))
				continue
			}
			checkNode(probs, v, f.Type, where+"."+k.Value)
		}
		return
	}
	if isByteCount(t, where) && n.ShortTag() == "!!str" {
		b, err := devices.ParseSize(n.Value)
		if err != nil {
			probs.add(n.Line, "%s: %s is not a byte count (an integer, or a size such as 64MiB): %v", where, strings.TrimSpace(n.Value), err)
			return
		}
		// NB: rewritten in place, so that decoding the node gives the
		// integer the spec holds.
		n.Tag, n.Value, n.Style = "!!int", strconv.FormatInt(b, 10), 0
	}
	var val any
	if err := n.Decode(&val); err != nil {
		probs.add(n.Line, "%s: %v", where, err)
		return
	}
	if !finiteValue(val) {
		what := strings.TrimSpace(n.Value)
		if n.Kind != yaml.ScalarNode {
			what = describe(n) + " with a number that"
		}
		probs.add(n.Line, "%s: %s is not a finite number: a spec holds finite numbers only", where, what)
		return
	}
	js, err := json.Marshal(val)
	if err != nil {
		probs.add(n.Line, "%s: %v", where, err)
		return
	}
	if err := strictUnmarshal(js, reflect.New(t).Interface()); err != nil {
		probs.add(n.Line, "%s: %s is %s, want %s", where, strings.TrimSpace(n.Value), describe(n), typeName(t))
	}
}

// finiteValue reports whether every number in a decoded YAML value is
// finite (NaN and infinities have no JSON form).
func finiteValue(v any) bool {
	switch v := v.(type) {
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case []any:
		return !slices.ContainsFunc(v, func(e any) bool { return !finiteValue(e) })
	case map[string]any:
		for _, e := range v {
			if !finiteValue(e) {
				return false
			}
		}
	}
	return true
}

// isByteCount reports whether the field at where, of type t, is a count of
// bytes (an integer whose JSON name ends in bytes, such as
// policy.les.max_inflight_bytes): a sweep file may give it as a size.
func isByteCount(t reflect.Type, where string) bool {
	return t.Kind() == reflect.Int64 && strings.HasSuffix(where, "bytes")
}

// describe names a YAML node's kind for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!str":
		return "a string"
	}
	return "a " + strings.TrimPrefix(n.ShortTag(), "!!")
}

// typeName names a Go type for messages in JSON terms.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "a "), "an ")
	case reflect.Struct:
		return "a mapping with fields " + strings.Join(fieldNames(t), ", ")
	}
	return t.String()
}

// strictUnmarshal is json.Unmarshal refusing unknown fields.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// infoKeys are the keys ResolvedConfig adds; a sweep file may carry them
// (so a results folder's sweep.yaml runs again as is) and they are ignored.
var infoKeys = []string{"lessim_version", "results_format", "sweep_id", "grid", "points"}

// checkInfo refuses an info key holding more than the scalar lessim writes
// there: a grid under "grid:" would otherwise be ignored without a word.
func checkInfo(probs *Problems, k, v *yaml.Node) {
	if v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode {
		return
	}
	hint := ""
	if k.Value == "grid" {
		hint = "; the grid's fields and values go under axes"
	}
	probs.add(k.Line, "%s: lessim writes a single value here when it records a sweep (ignored when read back), got %s%s",
		k.Value, describe(v), hint)
}

// ResolvedConfig is the sweep file as run, for the results folder's
// sweep.yaml: the lessim version, results format, sweep id and point count,
// then the base and the axes (in order). It parses back to the same grid.
func (g *Grid) ResolvedConfig(points []Point, version string) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v any) error {
		var n yaml.Node
		if err := n.Encode(v); err != nil {
			return err
		}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &n)
		return nil
	}
	axes := &yaml.Node{Kind: yaml.MappingNode}
	for _, ax := range g.Axes {
		var n yaml.Node
		if err := n.Encode(ax.Values); err != nil {
			return nil, err
		}
		n.Style = yaml.FlowStyle
		axes.Content = append(axes.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: ax.Field}, &n)
	}
	for _, kv := range []struct {
		k string
		v any
	}{{"lessim_version", version}, {"results_format", FormatVersion}, {"sweep_id", SweepID(points)},
		{"grid", g.Name}, {"points", len(points)}, {"base", g.base}} {
		if err := add(kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "axes"}, axes)
	var b bytes.Buffer
	b.WriteString("# The sweep as run by lessim sweep (a valid sweep file: lessim sweep --config this).\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
