// Package reports renders simulation and measurement results for people and
// for other tools: aligned text, JSON and (in later work) Parquet tables and
// plots. It formats what sim computed; it never recomputes a result.
//
// Units in text output: times in milliseconds or seconds, sizes in binary
// units (MiB = 2^20 bytes), rates in tokens per second.
package reports
