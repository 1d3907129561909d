package sweep

// EncodeRows encodes rows as one results Parquet file (the same schema and
// metadata as a sweep's parts), for tools that write results outside a sweep
// folder, such as lessim validate.
func EncodeRows(sweepID string, rows []Row) ([]byte, error) { return encodePart(sweepID, rows) }
