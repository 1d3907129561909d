// Package runs holds measured decode runs: what a real engine measured for
// each decoded token (wall time, flash time, stalls, cache management, bytes
// read), so that a device profile can be fitted to them and a simulation can
// be compared with them token by token.
//
// A Run is one decode of a known trace on one device. Its Tokens are in
// decode order; Token.Step counts from 1. Times are nanoseconds and sizes
// bytes, whatever unit the source file used.
//
// Formats (see Formats):
//
//	bmoe-metrics-csv   BigMoeOnEdge's --csv sink (github.com/Helldez/BigMoeOnEdge):
//	                   step,steps,wall_ms,io_ms,compute_ms,read_bytes,cache_hit_pct,
//	                   stall_ms,mgmt_ms,majflt,cpu_ms and a last "# summary k=v ..." line.
//	lessim-live-series `lessim live --series` Parquet: token, wall_ns, stall_ns,
//	                   compute_ns, bytes_read, major_faults (int64, ns and bytes).
//
// Readers report the first problems as "file:line: reason" and never accept
// a number that is not finite or is negative.
package runs
