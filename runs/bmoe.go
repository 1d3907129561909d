package runs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lessim/lessim/internal/textin"
)

// bmoeColumn maps one BigMoeOnEdge metrics column onto a Token field.
type bmoeColumn struct {
	field    Field
	ms       bool // milliseconds (else a count or bytes)
	positive bool // a time every decoded token takes: 0 is refused
	set      func(t *Token, v float64)
}

// bmoeColumns are the columns of BigMoeOnEdge's --csv sink
// (shared/reference/README.md "runs/qwen.metrics.csv").
// NB: wall, compute and CPU time are positive (a decoded token takes time
// and computes); I/O, stall and management time may be 0 (a token whose
// experts were all cached reads nothing and waits for nothing).
var bmoeColumns = map[string]bmoeColumn{
	"wall_ms":       {FieldWall, true, true, func(t *Token, v float64) { t.WallNS = int64(v) }},
	"io_ms":         {FieldIO, true, false, func(t *Token, v float64) { t.IONS = int64(v) }},
	"compute_ms":    {FieldCompute, true, true, func(t *Token, v float64) { t.ComputeNS = int64(v) }},
	"stall_ms":      {FieldStall, true, false, func(t *Token, v float64) { t.StallNS = int64(v) }},
	"mgmt_ms":       {FieldMgmt, true, false, func(t *Token, v float64) { t.MgmtNS = int64(v) }},
	"cpu_ms":        {FieldCPU, true, true, func(t *Token, v float64) { t.CPUNS = int64(v) }},
	"read_bytes":    {FieldRead, false, false, func(t *Token, v float64) { t.ReadBytes = int64(v) }},
	"majflt":        {FieldFaults, false, false, func(t *Token, v float64) { t.MajorFaults = int64(v) }},
	"cache_hit_pct": {FieldHitPct, false, false, func(t *Token, v float64) { t.CacheHitPct = v }},
}

// ErrParquet refuses a Parquet file read as BigMoeOnEdge's metrics CSV: it
// is most likely the series of `lessim live --series`, which the
// lessim-live-series format reads.
var ErrParquet = errors.New("a Parquet file, not a BigMoeOnEdge metrics CSV (a lessim live --series file is the lessim-live-series format)")

// errBinary refuses a line that is not text (invalid UTF-8 or a NUL byte):
// the file is not a CSV at all.
var errBinary = errors.New("binary data, not CSV text: not a BigMoeOnEdge metrics CSV")

// bmoeMaxValue bounds every value: 1e15 ms is 31,000 years, 1e15 bytes a
// petabyte per token; anything larger is a corrupt file, and the bound keeps
// the conversion to int64 nanoseconds from overflowing.
const bmoeMaxValue = 1e15

// MaxMetricsBytes bounds a metrics CSV's text (about 500,000 tokens' rows).
const MaxMetricsBytes = 64 << 20

// ReadBMoEMetrics reads BigMoeOnEdge's per-token metrics CSV. The header
// names the columns (any order); step and wall_ms are required, unknown
// columns are ignored. Steps must count 1, 2, 3, ...; every value must be a
// finite, non-negative number, and wall_ms, compute_ms and cpu_ms positive.
// The steps column (the tokens asked for) must hold one value, which no
// step exceeds. A "# summary k=v ..." line is kept in Run.Summary; a key may
// appear once, and its tokens= must be the number of token rows. Gzip input
// and a UTF-8 byte-order mark are accepted. Errors and Run.Name name the
// file by its path as given.
func ReadBMoEMetrics(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseBMoEMetrics(f, path)
}

// ParseBMoEMetrics is ReadBMoEMetrics on a reader; name labels errors.
func ParseBMoEMetrics(r io.Reader, name string) (*Run, error) {
	br, done, err := textin.Reader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	defer done()
	pr := bufio.NewReaderSize(br, 64<<10)
	if magic, _ := pr.Peek(4); string(magic) == "PAR1" {
		return nil, fmt.Errorf("%s: %w", name, ErrParquet)
	}
	// NB: bounded after decompression: a gzip bomb stops here too.
	br = textin.Limit(pr, name, "metrics CSV", MaxMetricsBytes)
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
	if err := p.checkSummaryTokens(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, p.summaryAt, err)
	}
	return p.run, nil
}

// checkSummaryTokens refuses a summary whose tokens= is not the number of
// token rows (a file cut short, or rows appended to another run's).
func (p *bmoeParser) checkSummaryTokens() error {
	v, ok := p.run.Summary["tokens"]
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("summary tokens=%s is not a count of tokens", v)
	}
	if n != len(p.run.Tokens) {
		return fmt.Errorf("summary tokens=%d, but the file has %d token rows: is it cut short, or joined from two runs?", n, len(p.run.Tokens))
	}
	return nil
}

type bmoeParser struct {
	name        string
	line        int
	run         *Run
	cols        []string // header, nil before it
	stepCol     int
	stepsCol    int   // the tokens asked for; -1 when absent
	steps       int64 // its value in the first row
	summaryAt   int   // line of the summary, 0 before it
	partialAt   int   // line of a short row, which must be the last
	partialCols int
}

func (p *bmoeParser) parseLine(text string) error {
	if p.partialAt > 0 {
		p.line = p.partialAt
		return fmt.Errorf("%d columns, header has %d", p.partialCols, len(p.cols))
	}
	switch {
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return errBinary // NB: never print the bytes themselves
	case strings.TrimSpace(text) == "":
		return nil
	case strings.HasPrefix(text, "# summary"):
		return p.summary(text)
	case strings.HasPrefix(text, "#"):
		return nil
	case p.cols == nil:
		return p.header(text)
	}
	return p.row(text)
}

// summary keeps a "# summary k=v ..." line's values; a key given twice (or a
// second summary line) is refused rather than one value silently winning.
func (p *bmoeParser) summary(text string) error {
	if p.summaryAt > 0 {
		return fmt.Errorf("a second summary line (the first is line %d)", p.summaryAt)
	}
	p.summaryAt = p.line
	for _, kv := range strings.Fields(strings.TrimPrefix(text, "# summary")) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if was, dup := p.run.Summary[k]; dup {
			return fmt.Errorf("summary key %s appears twice (%s=%s and %s=%s)", k, k, was, k, v)
		}
		p.run.Summary[k] = v
	}
	return nil
}

func (p *bmoeParser) header(text string) error {
	p.cols = strings.Split(text, ",")
	p.stepCol, p.stepsCol = -1, -1
	seen := map[string]bool{}
	for i, c := range p.cols {
		c = strings.TrimSpace(c)
		p.cols[i] = c
		if seen[c] {
			return fmt.Errorf("column %q appears twice", c)
		}
		seen[c] = true
		switch c {
		case "step":
			p.stepCol = i
		case "steps":
			p.stepsCol = i
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
		if err := p.cell(&t, i, c, strings.TrimSpace(vals[i])); err != nil {
			return err
		}
	}
	p.run.Tokens = append(p.run.Tokens, t)
	return nil
}

// cell parses column c (index i) of a token row into t.
func (p *bmoeParser) cell(t *Token, i int, c, raw string) error {
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > bmoeMaxValue {
		return fmt.Errorf("column %s: %q is not a finite non-negative number below %g", c, raw, bmoeMaxValue)
	}
	switch i {
	case p.stepCol:
		if v != float64(len(p.run.Tokens)+1) {
			return fmt.Errorf("step %s: want %d (steps count 1, 2, 3, ...)", raw, len(p.run.Tokens)+1)
		}
		t.Step = int(v)
		return nil
	case p.stepsCol:
		return p.stepsValue(v, raw)
	}
	bc, ok := bmoeColumns[c]
	if !ok {
		return nil
	}
	ns := v
	if bc.ms {
		ns = math.Round(v * 1e6)
	}
	if bc.positive && ns <= 0 {
		if v > 0 {
			return fmt.Errorf("column %s: %s ms is under 1 ns, not a positive time", c, raw)
		}
		return fmt.Errorf("column %s: %s is not a positive time", c, raw)
	}
	switch {
	case bc.field == FieldHitPct && v > 100:
		return fmt.Errorf("column %s: %s is above 100%%, not a hit rate", c, raw)
	case bc.field == FieldWall && ns < MinTokenNS:
		return fmt.Errorf("column %s: %s ms is under %d ns, faster than any engine decodes a token (a unit slip?)", c, raw, MinTokenNS)
	}
	bc.set(t, ns)
	return nil
}

// stepsValue checks the steps column (the tokens asked for): one value in
// every row, and no row beyond it.
func (p *bmoeParser) stepsValue(v float64, raw string) error {
	n := int64(len(p.run.Tokens) + 1) // this row's step
	if v < 1 || v != math.Trunc(v) {
		return fmt.Errorf("column steps: %s is not a count of tokens", raw)
	}
	if n == 1 {
		p.steps = int64(v)
	} else if int64(v) != p.steps {
		return fmt.Errorf("column steps: %s, but the rows above say %d (a run asks for one number of tokens)", raw, p.steps)
	}
	if n > p.steps {
		return fmt.Errorf("step %d is beyond steps %d, the tokens the run asked for", n, p.steps)
	}
	return nil
}
