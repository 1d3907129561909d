package runs

import (
	"fmt"
	"slices"
	"strings"
)

// Token is what was measured for one decoded token. Fields a format does not
// carry are -1 (see Run.Has).
type Token struct {
	Step        int     // 1-based decode step
	WallNS      int64   // wall time of the token's decode
	IONS        int64   // flash read time (summed over I/O lanes when they overlap)
	ComputeNS   int64   // compute time as the engine reports it
	StallNS     int64   // wall time the compute thread waited for flash
	MgmtNS      int64   // cache management on the compute thread (commit, evict, bookkeeping)
	ReadBytes   int64   // expert bytes read from flash
	MajorFaults int64   // major page faults during the token
	CPUNS       int64   // CPU time over all threads
	CacheHitPct float64 // the engine's cumulative hit rate so far, percent (-1 if absent)
}

// MinTokenNS is the least wall time a run's token may take: 10 µs, 100,000
// tokens/s, beyond any engine decoding a MoE model; a shorter one is a unit
// slip or an edited file, not a measurement.
const MinTokenNS = 10_000

// Field names a Token column, for Run.Has.
type Field string

// Token fields a run may carry.
const (
	FieldWall    Field = "wall"
	FieldIO      Field = "io"
	FieldCompute Field = "compute"
	FieldStall   Field = "stall"
	FieldMgmt    Field = "mgmt"
	FieldRead    Field = "read_bytes"
	FieldFaults  Field = "major_faults"
	FieldCPU     Field = "cpu"
	FieldHitPct  Field = "cache_hit_pct"
)

// Run is one measured decode.
type Run struct {
	Name    string            // where it came from: the path as given to the reader
	Format  string            // one of Formats()
	Fields  []Field           // fields the source carries
	Tokens  []Token           // in decode order
	Summary map[string]string // the source's own totals, as written (may be empty)
}

// Has reports whether the run's source carries field f.
func (r *Run) Has(f Field) bool { return slices.Contains(r.Fields, f) }

// WallNS returns the per-token wall times.
func (r *Run) WallNS() []int64 {
	out := make([]int64, len(r.Tokens))
	for i, t := range r.Tokens {
		out[i] = t.WallNS
	}
	return out
}

// MeanWallNS is the mean per-token wall time.
func (r *Run) MeanWallNS() float64 {
	if len(r.Tokens) == 0 {
		return 0
	}
	var s float64
	for _, t := range r.Tokens {
		s += float64(t.WallNS)
	}
	return s / float64(len(r.Tokens))
}

// reader reads one format.
type reader func(path string) (*Run, error)

// formats is the one list of run formats.
var formats = map[string]reader{
	"bmoe-metrics-csv":   ReadBMoEMetrics,
	"lessim-live-series": ReadLiveSeries,
}

// Formats lists the readable formats, sorted.
func Formats() []string {
	out := make([]string, 0, len(formats))
	for k := range formats {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Read reads the run at path in the named format.
func Read(path, format string) (*Run, error) {
	f, ok := formats[format]
	if !ok {
		return nil, fmt.Errorf("unknown run format %q (valid: %s)", format, strings.Join(Formats(), ", "))
	}
	return f(path)
}
