package runs

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lessim/lessim/internal/textin"
)

// bmoeColumn maps one BigMoeOnEdge metrics column onto a Token field.
type bmoeColumn struct {
	field Field
	ms    bool // milliseconds (else a count or bytes)
	set   func(t *Token, v float64)
}

// bmoeColumns are the columns of BigMoeOnEdge's --csv sink
// (shared/reference/README.md "runs/qwen.metrics.csv").
var bmoeColumns = map[string]bmoeColumn{
	"wall_ms":       {FieldWall, true, func(t *Token, v float64) { t.WallNS = int64(v) }},
	"io_ms":         {FieldIO, true, func(t *Token, v float64) { t.IONS = int64(v) }},
	"compute_ms":    {FieldCompute, true, func(t *Token, v float64) { t.ComputeNS = int64(v) }},
	"stall_ms":      {FieldStall, true, func(t *Token, v float64) { t.StallNS = int64(v) }},
	"mgmt_ms":       {FieldMgmt, true, func(t *Token, v float64) { t.MgmtNS = int64(v) }},
	"cpu_ms":        {FieldCPU, true, func(t *Token, v float64) { t.CPUNS = int64(v) }},
	"read_bytes":    {FieldRead, false, func(t *Token, v float64) { t.ReadBytes = int64(v) }},
	"majflt":        {FieldFaults, false, func(t *Token, v float64) { t.MajorFaults = int64(v) }},
	"cache_hit_pct": {FieldHitPct, false, func(t *Token, v float64) { t.CacheHitPct = v }},
}

// bmoeMaxValue bounds every value: 1e15 ms is 31,000 years, 1e15 bytes a
// petabyte per token; anything larger is a corrupt file, and the bound keeps
// the conversion to int64 nanoseconds from overflowing.
const bmoeMaxValue = 1e15

// ReadBMoEMetrics reads BigMoeOnEdge's per-token metrics CSV. The header
// names the columns (any order); step and wall_ms are required, unknown
// columns are ignored. Steps must count 1, 2, 3, ...; every value must be a
// finite, non-negative number. A last "# summary k=v ..." line is kept in
// Run.Summary. Gzip input and a UTF-8 byte-order mark are accepted.
func ReadBMoEMetrics(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseBMoEMetrics(f, filepath.Base(path))
}

// ParseBMoEMetrics is ReadBMoEMetrics on a reader; name labels errors.
func ParseBMoEMetrics(r io.Reader, name string) (*Run, error) {
	br, done, err := textin.Reader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	defer done()
	p := bmoeParser{name: name, run: &Run{Name: name, Format: "bmoe-metrics-csv", Summary: map[string]string{}}}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, p.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, p.line+1, err)
	}
	if p.cols == nil {
		return nil, fmt.Errorf("%s: no header line (want %q)", name, "step,...,wall_ms,...")
	}
	if len(p.run.Tokens) == 0 {
		return nil, fmt.Errorf("%s: no token rows", name)
	}
	if p.partialAt > 0 {
		return nil, fmt.Errorf("%s:%d: file is truncated: the last row has too few columns", name, p.partialAt)
	}
	return p.run, nil
}

type bmoeParser struct {
	name        string
	line        int
	run         *Run
	cols        []string // header, nil before it
	stepCol     int
	partialAt   int // line of a short row, which must be the last
	partialCols int
}

func (p *bmoeParser) parseLine(text string) error {
	if p.partialAt > 0 {
		p.line = p.partialAt
		return fmt.Errorf("%d columns, header has %d", p.partialCols, len(p.cols))
	}
	switch {
	case strings.TrimSpace(text) == "":
		return nil
	case strings.HasPrefix(text, "# summary"):
		for _, kv := range strings.Fields(strings.TrimPrefix(text, "# summary")) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				p.run.Summary[k] = v
			}
		}
		return nil
	case strings.HasPrefix(text, "#"):
		return nil
	case p.cols == nil:
		return p.header(text)
	}
	return p.row(text)
}

func (p *bmoeParser) header(text string) error {
	p.cols = strings.Split(text, ",")
	p.stepCol = -1
	seen := map[string]bool{}
	for i, c := range p.cols {
		c = strings.TrimSpace(c)
		p.cols[i] = c
		if seen[c] {
			return fmt.Errorf("column %q appears twice", c)
		}
		seen[c] = true
		if c == "step" {
			p.stepCol = i
		}
		if bc, ok := bmoeColumns[c]; ok {
			p.run.Fields = append(p.run.Fields, bc.field)
		}
	}
	if p.stepCol < 0 || !seen["wall_ms"] {
		return fmt.Errorf("header %q: needs columns step and wall_ms", text)
	}
	return nil
}

func (p *bmoeParser) row(text string) error {
	vals := strings.Split(text, ",")
	if len(vals) != len(p.cols) {
		if len(vals) < len(p.cols) {
			// A short row may be a cut-off last line: decided at EOF.
			p.partialAt, p.partialCols = p.line, len(vals)
			return nil
		}
		return fmt.Errorf("%d columns, header has %d", len(vals), len(p.cols))
	}
	t := Token{IONS: -1, ComputeNS: -1, StallNS: -1, MgmtNS: -1, ReadBytes: -1, MajorFaults: -1, CPUNS: -1, CacheHitPct: -1}
	for i, c := range p.cols {
		v, err := strconv.ParseFloat(strings.TrimSpace(vals[i]), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > bmoeMaxValue {
			return fmt.Errorf("column %s: %q is not a finite non-negative number below %g", c, vals[i], bmoeMaxValue)
		}
		if i == p.stepCol {
			if v != float64(len(p.run.Tokens)+1) {
				return fmt.Errorf("step %s: want %d (steps count 1, 2, 3, ...)", vals[i], len(p.run.Tokens)+1)
			}
			t.Step = int(v)
			continue
		}
		bc, ok := bmoeColumns[c]
		if !ok {
			continue
		}
		if bc.ms {
			v = math.Round(v * 1e6)
		}
		bc.set(&t, v)
	}
	p.run.Tokens = append(p.run.Tokens, t)
	return nil
}
