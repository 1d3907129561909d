package runs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lessim/lessim/internal/pqsafe"
)

// seriesColumn maps one column of lessim's live series onto a Token field.
type seriesColumn struct {
	field Field
	set   func(t *Token, v int64)
}

// seriesColumns are the columns of `lessim live --series` (runtime/live's
// TokenSample) that a Run carries; the others (hits, misses, resident
// bytes, ...) are not per-token measurements of time or I/O.
var seriesColumns = map[string]seriesColumn{
	"wall_ns":      {FieldWall, func(t *Token, v int64) { t.WallNS = v }},
	"stall_ns":     {FieldStall, func(t *Token, v int64) { t.StallNS = v }},
	"compute_ns":   {FieldCompute, func(t *Token, v int64) { t.ComputeNS = v }},
	"bytes_read":   {FieldRead, func(t *Token, v int64) { t.ReadBytes = v }},
	"major_faults": {FieldFaults, func(t *Token, v int64) { t.MajorFaults = v }},
}

// ReadLiveSeries reads the per-token Parquet series `lessim live --series`
// writes: int64 columns token (from 0, counting up by one), wall_ns and the
// optional ones in seriesColumns. Every value must be non-negative, wall
// times positive. Errors and Run.Name name the file by its path as given.
func ReadLiveSeries(path string) (*Run, error) {
	name := path // as given: errors name the file the caller named
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// NB: pqsafe checks the footer against the file before arrow-go reads
	// it, as for traces and results (a corrupt footer can make arrow-go
	// allocate without bound or panic).
	pf, err := pqsafe.Open(f, name)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	tbl, err := pqsafe.ReadTable(pf, name, 0)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	cols := map[string][]int64{}
	for i := range int(tbl.NumCols()) {
		c := tbl.Column(i)
		var vals []int64
		for _, ch := range c.Data().Chunks() {
			a, ok := ch.(*array.Int64)
			if !ok {
				return nil, fmt.Errorf("%s: column %s is %s, want int64 (a lessim live series)", name, c.Name(), ch.DataType())
			}
			vals = append(vals, a.Int64Values()...)
		}
		cols[c.Name()] = vals
	}
	return seriesRun(name, cols, int(tbl.NumRows()))
}

// seriesRun builds a Run from a series' columns, checking every value.
func seriesRun(name string, cols map[string][]int64, rows int) (*Run, error) {
	if _, ok := cols["token"]; !ok {
		return nil, fmt.Errorf("%s: no token column (not a lessim live series?)", name)
	}
	if _, ok := cols["wall_ns"]; !ok {
		return nil, fmt.Errorf("%s: no wall_ns column", name)
	}
	if rows == 0 {
		return nil, errors.New(name + ": no tokens")
	}
	run := &Run{Name: name, Format: "lessim-live-series", Tokens: make([]Token, rows)}
	names := slices.Sorted(maps.Keys(seriesColumns)) // a fixed order: fields and errors are deterministic
	for _, n := range names {
		if _, ok := cols[n]; ok {
			run.Fields = append(run.Fields, seriesColumns[n].field)
		}
	}
	for i := range rows {
		t := Token{Step: i + 1, IONS: -1, MgmtNS: -1, CPUNS: -1, CacheHitPct: -1, ComputeNS: -1, StallNS: -1, ReadBytes: -1, MajorFaults: -1}
		if got := cols["token"][i]; got != int64(i) {
			return nil, fmt.Errorf("%s: row %d: token %d, want %d (tokens count up from 0)", name, i+1, got, i)
		}
		for _, n := range names {
			v, ok := cols[n]
			if !ok {
				continue
			}
			c := seriesColumns[n]
			if v[i] < 0 {
				return nil, fmt.Errorf("%s: row %d: %s is %d, want >= 0", name, i+1, n, v[i])
			}
			c.set(&t, v[i])
		}
		if t.WallNS < MinTokenNS {
			return nil, fmt.Errorf("%s: row %d: wall_ns is %d, want >= %d (no engine decodes a token faster)", name, i+1, t.WallNS, MinTokenNS)
		}
		run.Tokens[i] = t
	}
	return run, nil
}
