package traces

import "github.com/apache/arrow-go/v18/parquet/metadata"

// MaxPos is the largest token position in the file according to the
// statistics its writer stored per row group (as Writer does), read from the
// footer without reading a row: what a run that sizes the KV cache by the
// longest sequence needs to know before it streams the trace. ok is false
// when the file has no rows or a row group lacks the statistics; read the
// steps then.
func (r *Reader) MaxPos() (pos int32, ok bool) {
	md := r.pf.MetaData()
	col := md.Schema.ColumnIndexByName(colPos)
	if col < 0 || md.NumRowGroups() == 0 {
		return 0, false
	}
	pos = -1
	for g := range md.NumRowGroups() {
		cc, err := md.RowGroup(g).ColumnChunk(col)
		if err != nil {
			return 0, false
		}
		if set, err := cc.StatsSet(); err != nil || !set {
			return 0, false
		}
		st, err := cc.Statistics()
		if err != nil {
			return 0, false
		}
		s, isInt := st.(*metadata.Int32Statistics)
		if !isInt || !s.HasMinMax() {
			return 0, false
		}
		pos = max(pos, s.Max())
	}
	return pos, pos >= 0
}
