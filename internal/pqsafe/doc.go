// Package pqsafe opens Parquet files that may be truncated or corrupt
// without letting arrow-go crash the process on them.
//
// arrow-go trusts a file's footer: a corrupt column chunk size or a corrupt
// length inside the stored Arrow schema (the ARROW:schema key, a flatbuffer)
// makes it allocate hundreds of gigabytes, which is a fatal error no recover
// can catch. Open checks the magic, then every column chunk's offsets and
// sizes against the file's size, and drops the stored Arrow schema (columns
// then take their types from the Parquet schema, which for lessim's files is
// the same); a panic that still happens while reading is turned into an
// error by the callers with Recovered. Errors name the file:
// "FILE: corrupt Parquet file: REASON".
//
// arrow-go also reads a null element of a list whose elements the Parquet
// schema says are required as a missing value, shifting the rest of the
// column: FindNullElement finds one in the Parquet levels, for the traces
// reader (once a batch looks wrong) and for ReadTable (every list column,
// CheckListElements), as "FILE: row R: COLUMN[I] is null (...)".
package pqsafe
