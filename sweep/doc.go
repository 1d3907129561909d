// Package sweep runs grids of experiments: a sweep file (YAML) names a base
// experiment.Spec and axes over its fields; the grid is the product of the
// axes, expanded in a stable order, each point identified by its spec's hash.
//
// # Model
//
// ParseGrid checks a sweep file whole and lists every problem with its line
// (unknown fields, values of the wrong type, empty or repeated axes, keys
// written twice, merge keys, a second YAML document); Expand
// turns it into Points, collapsing points whose specs are equal once the
// parameters of other policies are dropped. Run executes the points of one
// shard (index mod shards) on GOMAXPROCS workers. Points of the same trace
// share one experiment.Inputs, so a trace is read or generated once and its
// steps are shared read-only; the Inputs is dropped after the trace's last
// point.
//
// # Results
//
// Each point becomes one Row: its id, index and sweep id, the resolved spec
// flattened into "spec."-prefixed columns (JSON names joined by "."), and
// every sim.Result field under its JSON name, derived from the structs by
// reflection (ColumnNames lists them). Rows are written to a results folder
// as Parquet parts, part-<shard>-of-<shards>-<seq>.parquet, each written
// atomically (internal/atomicfile), beside manifest.json (results format
// version and sweep id) and sweep.yaml (the sweep as run). A rerun reads the
// point ids of the finished parts and runs only the others, so a killed sweep
// resumes without duplicates; a folder of another format or grid is refused.
//
// Units are those of sim.Result and experiment.Spec: nanoseconds and bytes.
// docs/sweeps.md describes the file format, the columns, sharding on a
// Kubernetes Indexed Job, and reading the results with DuckDB or pandas.
package sweep
