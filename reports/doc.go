// Package reports renders simulation and measurement results for people and
// for other tools: aligned text and JSON of one result, per-pass plots, and,
// for a results folder (sweep parts and measured rows), a Table read from its
// Parquet files, gonum/plot figures (PNG and SVG) and a self-contained HTML
// report, and a validation's predicted-vs-measured comparison (Compare: the
// error, MAPE and ranking of each policy × cache size) with its table and
// plot. It formats what sim computed; it never recomputes a result.
//
// Units in text output: times in milliseconds or seconds, sizes in binary
// units (MiB = 2^20 bytes, GiB = 2^30 bytes), rates in tokens per second.
package reports
