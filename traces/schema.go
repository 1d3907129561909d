package traces

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Column names of the trace file (see docs/trace-format.md).
const (
	colSeq         = "seq"
	colPos         = "pos"
	colPhase       = "phase"
	colPass        = "pass"
	colLayer       = "layer"
	colExperts     = "experts"
	colWeights     = "weights"
	colLogits      = "logits"
	colLookahead   = "lookahead_" // + depth 1..D
	colRouterInput = "router_input"
	colHit         = "hit"
	colComputeNS   = "compute_ns"
)

// pqMaxHidden bounds the router input vectors a trace can describe, so a
// corrupt header cannot size huge buffers. The layer and expert counts are
// bounded by the model spec's checks (pqCheckMeta).
const pqMaxHidden = 1 << 20

// Sizing of row groups (writer) and record batches (reader). Both follow from
// Meta only, so the same Meta always gives the same file layout.
const (
	pqRowGroupBytes = 64 << 20 // target uncompressed bytes per row group
	pqRowGroupMin   = 1024
	pqRowGroupMax   = 64 << 10
	pqBatchBytes    = 8 << 20 // target uncompressed bytes per read batch
	pqBatchMin      = 64
	pqBatchMax      = 16 << 10
)

// pqLookaheadName is the column holding depth-d lookahead scores (d ≥ 1).
func pqLookaheadName(d int) string { return fmt.Sprintf("%s%d", colLookahead, d) }

// Compact lookahead columns (Meta.LookaheadTop > 0), per depth d: the best
// candidates' expert indices, their scores, and the vector's softmax sum
// relative to the best score (CandidateIndex.ExpSum).
func pqLookTopName(d int) string   { return fmt.Sprintf("%stop_%d", colLookahead, d) }
func pqLookScoreName(d int) string { return fmt.Sprintf("%sscore_%d", colLookahead, d) }
func pqLookSumName(d int) string   { return fmt.Sprintf("%ssum_%d", colLookahead, d) }

// pqSchema is the Arrow schema of a trace file for meta (which must be valid).
// Vector columns are nullable; their elements are not.
//
// NB: the score vectors (logits, lookahead_d, router_input) have a fixed
// length (experts or hidden) but are written as variable lists: arrow-go's
// Parquet writer (v18.8.0) rejects null slots in a fixed_size_list ("lists
// with non-zero length null components are not supported"), and these columns
// need nulls. On disk both are the same Parquet LIST; the reader checks the
// length of every non-null entry.
func pqSchema(m *Meta) *arrow.Schema {
	f32 := arrow.PrimitiveTypes.Float32
	fields := []arrow.Field{
		{Name: colSeq, Type: arrow.PrimitiveTypes.Int32},
		{Name: colPos, Type: arrow.PrimitiveTypes.Int32},
		{Name: colPhase, Type: arrow.PrimitiveTypes.Uint8},
		{Name: colPass, Type: arrow.PrimitiveTypes.Int32},
		{Name: colLayer, Type: arrow.PrimitiveTypes.Int16},
		{Name: colExperts, Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
		{Name: colWeights, Type: arrow.ListOfNonNullable(f32), Nullable: true},
	}
	if m.HasLogits {
		fields = append(fields, arrow.Field{Name: colLogits, Type: arrow.ListOfNonNullable(f32), Nullable: true})
	}
	for d := 1; d <= m.LookaheadDepth; d++ {
		if m.LookaheadTop > 0 {
			fields = append(fields,
				arrow.Field{Name: pqLookTopName(d), Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32), Nullable: true},
				arrow.Field{Name: pqLookScoreName(d), Type: arrow.ListOfNonNullable(f32), Nullable: true},
				arrow.Field{Name: pqLookSumName(d), Type: arrow.PrimitiveTypes.Float64, Nullable: true})
			continue
		}
		fields = append(fields, arrow.Field{Name: pqLookaheadName(d), Type: arrow.ListOfNonNullable(f32), Nullable: true})
	}
	if m.HasRouterInputs {
		fields = append(fields, arrow.Field{Name: colRouterInput, Type: arrow.ListOfNonNullable(f32), Nullable: true})
	}
	fields = append(fields,
		arrow.Field{Name: colHit, Type: arrow.ListOfNonNullable(arrow.FixedWidthTypes.Boolean), Nullable: true},
		arrow.Field{Name: colComputeNS, Type: arrow.PrimitiveTypes.Int64},
	)
	return arrow.NewSchema(fields, nil)
}

// pqRowBytes estimates one row's uncompressed size from meta, for sizing.
func pqRowBytes(m *Meta) int64 {
	k := int64(max(m.Model.TopK, 1))
	e := int64(m.Model.Experts)
	b := int64(4+4+1+4+2+8) + k*(4+4+1)
	if m.HasLogits {
		b += 4 * e
	}
	if m.LookaheadTop > 0 {
		b += int64(m.LookaheadDepth) * (8*int64(m.LookaheadTop) + 8)
	} else {
		b += 4 * e * int64(m.LookaheadDepth)
	}
	if m.HasRouterInputs {
		b += 4 * int64(m.Model.Hidden)
	}
	return b
}

// pqRows is target/rowBytes clamped to [lo, hi].
func pqRows(m *Meta, target, lo, hi int64) int64 {
	return min(max(target/pqRowBytes(m), lo), hi)
}

// pqWriterProps are the Parquet writer settings for meta: zstd everywhere,
// BYTE_STREAM_SPLIT without dictionary for float columns (their bytes compress
// well once split into planes), dictionary encoding for the small integers.
func pqWriterProps(m *Meta) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(pqRows(m, pqRowGroupBytes, pqRowGroupMin, pqRowGroupMax)),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
	}
	floats := []string{colWeights}
	if m.HasLogits {
		floats = append(floats, colLogits)
	}
	for d := 1; d <= m.LookaheadDepth; d++ {
		if m.LookaheadTop > 0 {
			floats = append(floats, pqLookScoreName(d))
		} else {
			floats = append(floats, pqLookaheadName(d))
		}
	}
	if m.HasRouterInputs {
		floats = append(floats, colRouterInput)
	}
	for _, c := range floats {
		// NB: pqarrow names a list's leaf column <name>.list.element.
		leaf := c + ".list.element"
		opts = append(opts,
			parquet.WithDictionaryFor(leaf, false),
			parquet.WithEncodingFor(leaf, parquet.Encodings.ByteStreamSplit),
			// Min/max statistics of score vectors are of no use to anyone.
			parquet.WithStatsFor(leaf, false),
		)
	}
	opts = append(opts, parquet.WithDictionaryFor(colHit+".list.element", false))
	return parquet.NewWriterProperties(opts...)
}

// pqMetaJSON is meta's canonical JSON form stored under MetaKey.
func pqMetaJSON(m *Meta) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding trace meta: %w", err)
	}
	return string(b), nil
}

// pqCheckMeta reports every reason meta cannot describe a trace file, one
// line each as "NAME: lessim.trace.meta: field: reason" (NAME omitted when
// empty), or nil. The model spec is checked as recorded specs are
// (devices.ModelSpec.RecordedProblems): its bounds also keep the layer count
// within the int16 layer column and the vectors' sizes sane.
func pqCheckMeta(m *Meta, name string) error {
	ps := pqMetaProblems(m)
	if len(ps) == 0 {
		return nil
	}
	prefix := MetaKey + ": "
	if name != "" {
		prefix = name + ": " + prefix
	}
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = errors.New(prefix + p)
	}
	return errors.Join(errs...)
}

// pqMetaProblems lists meta's problems as "field: reason".
func pqMetaProblems(m *Meta) []string {
	var p []string
	for _, mp := range m.Model.RecordedProblems() {
		p = append(p, "model."+mp)
	}
	add := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	layers := len(m.Model.Layers)
	if m.LookaheadDepth < 0 || (layers > 0 && m.LookaheadDepth >= layers) {
		add("lookahead_depth: %d out of range [0,%d] (depth d scores MoE layer i+d)", m.LookaheadDepth, max(layers-1, 0))
	}
	if m.LookaheadTop < 0 || m.LookaheadTop > m.Model.Experts || m.LookaheadTop > 0 && m.LookaheadDepth == 0 {
		add("lookahead_top: %d out of range [0,%d] (and needs lookahead_depth >= 1)", m.LookaheadTop, m.Model.Experts)
	}
	if m.HasRouterInputs && (m.Model.Hidden < 1 || m.Model.Hidden > pqMaxHidden) {
		add("has_router_inputs: needs model.hidden in [1,%d], got %d", pqMaxHidden, m.Model.Hidden)
	}
	return p
}
