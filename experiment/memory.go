package experiment

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/lessim/lessim/sim"

	"github.com/lessim/lessim/traces"
)

// MemoryEstimate is the bytes a run is expected to hold, estimated before its
// trace is loaded or generated, with what it counts.
type MemoryEstimate struct {
	// Steps is the trace's tokens; Layers its MoE layers.
	Steps  int64
	Layers int
	// TraceBytes is the trace as loaded (traces.MemoryBytes: the columns the
	// run reads and les's candidate index), PolicyBytes the policy's own
	// state that grows with the trace (oracle's next-use index: one int64
	// per expert selection), StateBytes the per-expert state of the cache
	// and policy.
	TraceBytes, PolicyBytes, StateBytes int64
}

// Total is the estimate's sum.
func (e MemoryEstimate) Total() int64 { return e.TraceBytes + e.PolicyBytes + e.StateBytes }

// perKeyBytes is a generous bound on the simulator's and a policy's state per
// (layer, expert) key: residency, recency lists, counts, heap entries.
const perKeyBytes = 128

// EstimateMemory estimates the memory of a run of policy on steps tokens of
// a trace described by m, read with cols, with a candidate index of
// indexCands per lookahead vector (0: none). It is pure: the limit it is
// compared with is read at the edge (Inputs.MaxMemory).
func EstimateMemory(m traces.Meta, steps int64, cols traces.Columns, policy string, indexCands int) MemoryEstimate {
	e := MemoryEstimate{Steps: steps, Layers: len(m.Model.Layers)}
	e.TraceBytes = traces.MemoryBytes(m, steps, cols, indexCands)
	if policy == "oracle" || policy == "belady" {
		e.PolicyBytes = 8 * steps * int64(e.Layers) * int64(m.Model.TopK)
	}
	e.StateBytes = perKeyBytes * int64(e.Layers) * int64(m.Model.Experts)
	return e
}

// memoryLimit is the limit a trace load is checked against and where it
// comes from: Inputs.MaxMemory when positive, else MemAvailable from
// /proc/meminfo; no limit (0) when MaxMemory is negative or MemAvailable
// cannot be read.
func (in *Inputs) memoryLimit() (int64, string) {
	switch {
	case in.MaxMemory > 0:
		return in.MaxMemory, "the memory limit"
	case in.MaxMemory < 0:
		return 0, ""
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, ""
	}
	if n, ok := memAvailable(b); ok {
		return n, "available memory (MemAvailable in /proc/meminfo)"
	}
	return 0, ""
}

// memAvailable parses the MemAvailable line of /proc/meminfo ("kB" are KiB).
func memAvailable(meminfo []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemAvailable:" {
			n, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil || n < 0 {
				return 0, false
			}
			if len(f) >= 3 && string(f[2]) == "kB" {
				n *= 1024
			}
			return n, true
		}
	}
	return 0, false
}

// checkMemory refuses a run whose estimate exceeds the limit.
func (in *Inputs) checkMemory(what, policy string, e MemoryEstimate) error {
	limit, from := in.memoryLimit()
	if limit <= 0 || e.Total() <= limit {
		return nil
	}
	return fmt.Errorf("%s: a run of policy %s needs about %s in memory (%d tokens × %d layers: trace %s, policy %s, state %s), more than %s: %s",
		what, policy, sim.FormatBytes(e.Total()), e.Steps, e.Layers, sim.FormatBytes(e.TraceBytes), sim.FormatBytes(e.PolicyBytes), sim.FormatBytes(e.StateBytes), from, sim.FormatBytes(limit))
}

// estimateCands is the candidate index size les will ask for (indexDepth
// after resolvePolicy's defaults), known before the trace is loaded.
func estimateCands(r *Spec, topK int) int {
	l := r.Policy.LES
	if r.Policy.Name != "les" || l != nil && l.NoPrefetch {
		return 0
	}
	switch {
	case l == nil:
		return topK
	case l.Threshold > 0 && l.MaxCandidates > 0:
		return l.MaxCandidates
	case l.Threshold > 0:
		return 2 * topK
	case l.TopN > 0:
		return l.TopN
	}
	return topK
}

// traceFootprint reads the Meta and step count of the trace file at path
// from its footer, without reading its rows.
func traceFootprint(path string) (traces.Meta, int64, error) {
	rd, err := traces.Open(path)
	if err != nil {
		return traces.Meta{}, 0, err
	}
	defer rd.Close()
	return rd.Meta(), max(rd.NumSteps(), 0), nil
}

// checkFileMemory refuses to load the trace at path for r when its run
// cannot fit.
func (in *Inputs) checkFileMemory(path string, cols traces.Columns, r *Spec) error {
	m, steps, err := traceFootprint(path)
	if err != nil {
		return err
	}
	e := EstimateMemory(m, steps, cols, r.Policy.Name, estimateCands(r, m.Model.TopK))
	return in.checkMemory("trace "+path, r.Policy.Name, e)
}
