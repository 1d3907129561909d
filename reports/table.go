package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/internal/pqsafe"
)

// Table is a results table in memory: the rows of every Parquet file of a
// results folder (sweep parts, measured runs), columns matched by name. A
// column a file lacks is null in that file's rows. Scalar columns are kept
// (strings, booleans, integers, floats); list columns are kept as lists of
// numbers (per-pass series) and their text.
type Table struct {
	// Names are the column names, in the order first seen.
	Names []string
	// Files are the files read, in order.
	Files []string
	// Ignored are the Parquet files that hold no rows of results (a trace
	// file, say), each "FILE: why"; they are not read.
	Ignored []string
	rows    int
	ends    []int // rows read after each of Files
	cols    map[string]*Column
}

// Column is one column of a Table. Exactly one of Str, Num or List is used,
// by Kind; Valid says which rows are not null.
type Column struct {
	Name  string
	Kind  ColumnKind
	Str   []string
	Num   []float64 // integers and booleans (1, 0) as float64
	List  [][]float64
	Valid []bool
	isInt bool
}

// ColumnKind is a Column's value type.
type ColumnKind int

// Column kinds.
const (
	KindString ColumnKind = iota
	KindNumber
	KindList
)

// Len is the number of rows.
func (t *Table) Len() int { return t.rows }

// Column returns the named column, or nil.
func (t *Table) Column(name string) *Column { return t.cols[name] }

// Num is row i of a numeric column; ok is false when the column is absent,
// not numeric or null there.
func (t *Table) Num(name string, i int) (float64, bool) {
	c := t.cols[name]
	if c == nil || c.Kind != KindNumber || !c.Valid[i] {
		return 0, false
	}
	return c.Num[i], true
}

// Str is row i of a column as text ("" when absent or null).
func (t *Table) Str(name string, i int) string {
	c := t.cols[name]
	if c == nil || !c.Valid[i] {
		return ""
	}
	switch c.Kind {
	case KindString:
		return c.Str[i]
	case KindNumber:
		if c.isInt {
			return strconv.FormatInt(int64(c.Num[i]), 10)
		}
		return strconv.FormatFloat(c.Num[i], 'g', -1, 64)
	}
	parts := make([]string, len(c.List[i]))
	for j, v := range c.List[i] {
		parts[j] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// ReadResults reads every *.parquet file directly in dir, sorted by name, as
// one table (hidden files, such as temporaries of a write in progress, are
// skipped). It fails when dir has no Parquet file.
func ReadResults(dir string) (*Table, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".parquet") && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no results (*.parquet files); run lessim sweep --out %s first", dir, dir)
	}
	slices.Sort(files)
	t, err := ReadTables(files...)
	if err != nil {
		return nil, err
	}
	if err := checkOneSweep(dir, t); err != nil {
		return nil, err
	}
	if err := checkOncePerPoint(dir, t); err != nil {
		return nil, err
	}
	return t, nil
}

// ErrDuplicatePoint is a results folder holding a sweep's point twice.
var ErrDuplicatePoint = errors.New("holds a point twice")

// checkOncePerPoint refuses a folder holding a sweep's point in two rows (a
// part copied, or parts of two runs into the folder at once): a plot or a
// heatmap cell would count it twice. It names the point and both files.
func checkOncePerPoint(dir string, t *Table) error {
	first := map[string]int{}
	for i := range t.Len() {
		if !sweepIDRE.MatchString(t.Str(colSweepID, i)) {
			continue
		}
		id := t.Str(colPointID, i)
		if j, ok := first[id]; ok {
			return fmt.Errorf("%s %w: point_id %s is in %s and in %s (a copied part, or two runs into one folder): delete one of them",
				dir, ErrDuplicatePoint, id, t.fileOf(j), t.fileOf(i))
		}
		first[id] = i
	}
	return nil
}

// sweepIDRE matches the id of a lessim sweep's grid (sweep.SweepID); the
// rows of validate and ablate carry ids with a prefix ("validate-...") and
// may sit beside a sweep's.
var sweepIDRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// checkOneSweep refuses a folder whose rows come from more than one sweep
// (parts copied together from two grids): their point numbers repeat, and
// the plots and tables would mix two grids without a word.
func checkOneSweep(dir string, t *Table) error {
	rows := map[string]int{}
	var ids []string
	for i := range t.Len() {
		id := t.Str(colSweepID, i)
		if !sweepIDRE.MatchString(id) {
			continue
		}
		if rows[id] == 0 {
			ids = append(ids, id)
		}
		rows[id]++
	}
	if len(ids) < 2 {
		return nil
	}
	slices.Sort(ids)
	desc := make([]string, len(ids))
	for i, id := range ids {
		desc[i] = fmt.Sprintf("%s (%s)", id, plural.Count(rows[id], "row"))
	}
	return fmt.Errorf("%s holds the rows of %d sweeps, %s: their point numbers repeat and one report would mix them; put each sweep's parts in a folder of its own (the sweep_id column and each part's metadata name its sweep)",
		dir, len(ids), strings.Join(desc, ", "))
}

// ReadTables reads the given Parquet files as one table. A file that holds
// no rows of results is not read but listed in Ignored: rows are lessim's
// results files (the lessim.results.format metadata key of sweep, validate
// and ablate) or files of another tool's rows with a source column (measured
// runs). It fails when no file holds rows.
func ReadTables(files ...string) (*Table, error) {
	t := &Table{cols: map[string]*Column{}}
	for _, f := range files {
		why, err := t.readFile(f)
		if err != nil {
			return nil, err
		}
		if why != "" {
			t.Ignored = append(t.Ignored, f+": "+why)
		}
	}
	if len(t.Files) == 0 && len(t.Ignored) > 0 {
		return nil, fmt.Errorf("no results: %s", strings.Join(t.Ignored, "; "))
	}
	return t, nil
}

// Metadata keys that tell a results file (sweep.FormatKey) and a trace
// (traces.MetaKey); reports imports neither package.
const (
	resultsFormatKey = "lessim.results.format"
	traceMetaKey     = "lessim.trace.meta"
)

// notRows says why the file pf holds no rows of results, or "".
func notRows(pf *file.Reader) string {
	md := pf.MetaData()
	kv := md.KeyValueMetadata()
	switch {
	case kv.FindValue(resultsFormatKey) != nil:
		return ""
	case kv.FindValue(traceMetaKey) != nil:
		return "a lessim trace, not results"
	case md.Schema.ColumnIndexByName(colSource) >= 0:
		return ""
	}
	return fmt.Sprintf("not results (no %s metadata, no %s column)", resultsFormatKey, colSource)
}

// readFile appends one file's rows, or returns why it holds none.
func (t *Table) readFile(path string) (ignored string, err error) {
	// NB: last resort only: pqsafe.Open checks the footer first; arrow-go
	// may still panic on corrupt pages.
	defer func() {
		if recover() != nil {
			err = pqsafe.Recovered(path)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	pf, err := pqsafe.Open(f, path)
	if err != nil {
		return "", err
	}
	defer pf.Close()
	if why := notRows(pf); why != "" {
		return why, nil
	}
	tbl, err := pqsafe.ReadTable(pf, path, 1024)
	if err != nil {
		return "", err
	}
	defer tbl.Release()
	return "", t.appendTable(path, tbl)
}

// appendTable appends the rows of tbl, read from path.
func (t *Table) appendTable(path string, tbl arrow.Table) error {
	n := int(tbl.NumRows())
	base := t.rows
	for i := range int(tbl.NumCols()) {
		col := tbl.Column(i)
		name := col.Name()
		c := t.cols[name]
		if c == nil {
			kind, isInt, ok := kindOfArrow(col.DataType())
			if !ok {
				continue
			}
			c = &Column{Name: name, Kind: kind, isInt: isInt}
			c.grow(base)
			t.cols[name] = c
			t.Names = append(t.Names, name)
		}
		if err := c.appendChunks(col.Data().Chunks()); err != nil {
			return fmt.Errorf("%s: column %s: %w", path, name, err)
		}
		if len(c.Valid) != base+n {
			return fmt.Errorf("%s: column %s has %d rows, want %d", path, name, len(c.Valid)-base, n)
		}
	}
	t.rows += n
	for _, c := range t.cols {
		c.grow(t.rows)
	}
	t.Files = append(t.Files, path)
	t.ends = append(t.ends, t.rows)
	return nil
}

// fileOf is the file row i was read from.
func (t *Table) fileOf(i int) string {
	f, _ := slices.BinarySearch(t.ends, i+1)
	return t.Files[f]
}

// kindOfArrow maps an Arrow type to a column kind.
func kindOfArrow(dt arrow.DataType) (kind ColumnKind, isInt, ok bool) {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return KindString, false, true
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return KindNumber, true, true
	case arrow.FLOAT32, arrow.FLOAT64:
		return KindNumber, false, true
	case arrow.LIST:
		switch k, _, ok := kindOfArrow(dt.(*arrow.ListType).Elem()); {
		case ok && k == KindNumber:
			return KindList, false, true
		case ok && k == KindString:
			return KindString, false, true // joined with "; "
		}
	}
	return 0, false, false
}

// grow pads c with nulls up to n rows.
func (c *Column) grow(n int) {
	for len(c.Valid) < n {
		c.Valid = append(c.Valid, false)
		switch c.Kind {
		case KindString:
			c.Str = append(c.Str, "")
		case KindNumber:
			c.Num = append(c.Num, 0)
		case KindList:
			c.List = append(c.List, nil)
		}
	}
}

// appendChunks appends the values of a column's chunks.
func (c *Column) appendChunks(chunks []arrow.Array) error {
	for _, a := range chunks {
		for i := range a.Len() {
			if a.IsNull(i) {
				c.grow(len(c.Valid) + 1)
				continue
			}
			switch c.Kind {
			case KindString:
				v, ok := strAt(a, i)
				if !ok {
					return errors.New("not a string column in every file")
				}
				c.Str = append(c.Str, v)
			case KindNumber:
				v, ok := numAt(a, i)
				if !ok {
					return errors.New("not a numeric column in every file")
				}
				c.Num = append(c.Num, v)
			case KindList:
				l, ok := a.(*array.List)
				if !ok {
					return errors.New("not a list column in every file")
				}
				s, e := l.ValueOffsets(i)
				vals := make([]float64, 0, e-s)
				for j := s; j < e; j++ {
					v, _ := numAt(l.ListValues(), int(j))
					vals = append(vals, v)
				}
				c.List = append(c.List, vals)
			}
			c.Valid = append(c.Valid, true)
		}
	}
	return nil
}

// numAt is a numeric or boolean array's value i as float64.
func numAt(a arrow.Array, i int) (float64, bool) {
	switch a := a.(type) {
	case *array.Int64:
		return float64(a.Value(i)), true
	case *array.Int32:
		return float64(a.Value(i)), true
	case *array.Int16:
		return float64(a.Value(i)), true
	case *array.Int8:
		return float64(a.Value(i)), true
	case *array.Uint64:
		return float64(a.Value(i)), true
	case *array.Uint32:
		return float64(a.Value(i)), true
	case *array.Uint16:
		return float64(a.Value(i)), true
	case *array.Uint8:
		return float64(a.Value(i)), true
	case *array.Float64:
		return a.Value(i), true
	case *array.Float32:
		return float64(a.Value(i)), true
	case *array.Boolean:
		if a.Value(i) {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// strAt is a string array's value i, or a list of strings' values joined.
func strAt(a arrow.Array, i int) (string, bool) {
	switch a := a.(type) {
	case interface{ Value(int) string }:
		return a.Value(i), true
	case *array.List:
		vals, ok := a.ListValues().(interface{ Value(int) string })
		if !ok {
			return "", false
		}
		s, e := a.ValueOffsets(i)
		parts := make([]string, 0, e-s)
		for j := s; j < e; j++ {
			parts = append(parts, vals.Value(int(j)))
		}
		return strings.Join(parts, "; "), true
	}
	return "", false
}
