package experiment

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/lessim/lessim/devices"
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
	// run reads and les's candidate index) or, streamed, the steps of one
	// pass, the reader's batch and 8 bytes of latency per token;
	// PolicyBytes the policy's own state that grows with the trace
	// (futureBytes); StateBytes the per-expert state of the cache and policy.
	TraceBytes, PolicyBytes, StateBytes int64
	// Streamed says the run streams its trace (EstimateStreamMemory).
	Streamed bool
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
	e.PolicyBytes = futureBytes(m, steps, policy)
	e.StateBytes = perKeyBytes * int64(e.Layers) * int64(m.Model.Experts)
	return e
}

// streamBatchBytes bounds what a trace file reader holds besides the steps
// it hands out: its record batches (about 8 MiB of decoded columns each: the
// one being read, one decoded ahead and one being decoded) and the
// decompression buffers behind them.
const streamBatchBytes = 64 << 20

// EstimateStreamMemory is EstimateMemory for a run that streams its trace
// (Inputs.StreamAbove): the steps of one pass of up to window tokens and
// the step after it instead of the whole trace, the reader's batch
// (streamBatchBytes) and the 8 bytes per token the exact latency
// percentiles keep. A prompt longer than window adds its steps.
func EstimateStreamMemory(m traces.Meta, steps int64, cols traces.Columns, policy string, indexCands, window int) MemoryEstimate {
	e := EstimateMemory(m, int64(window)+1, cols, policy, indexCands)
	e.Steps, e.Streamed = steps, true
	e.TraceBytes += streamBatchBytes + 8*steps
	e.PolicyBytes = futureBytes(m, steps, policy)
	return e
}

// futureBytes is what a policy keeps of the whole trace (policies.Future):
// oracle and belady 2 bytes per expert selection and 1 per token for the
// expert column plus 4 per selection for their next-use index and, per run,
// 8 bytes and a bit per (token, layer) position (their victim index: the
// count and XOR of the cached keys whose next use it is, and a bitset of the
// positions with its summary levels under 1/32 more); pinned-hot the expert column while it counts;
// other policies nothing.
func futureBytes(m traces.Meta, steps int64, policy string) int64 {
	layers := int64(len(m.Model.Layers))
	sel := steps * layers * int64(m.Model.TopK)
	switch policy {
	case "oracle", "belady":
		return 6*sel + steps + 8*steps*layers + (steps*layers/8)*33/32
	case "pinned-hot":
		return 2*sel + steps
	}
	return 0
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
	trace := "trace"
	if e.Streamed {
		trace = "streamed trace"
	}
	return fmt.Errorf("%s: a run of policy %s needs about %s in memory (%d tokens × %d layers: %s %s, policy %s, state %s), more than %s: %s",
		what, policy, sim.FormatBytes(e.Total()), e.Steps, e.Layers, trace, sim.FormatBytes(e.TraceBytes), sim.FormatBytes(e.PolicyBytes), sim.FormatBytes(e.StateBytes), from, sim.FormatBytes(limit))
}

// estimateCands is the candidate index size les will ask for (indexDepth
// after resolvePolicy's defaults), known before the trace is loaded. NB:
// capped at m's experts, the most an index holds: a larger top_n or
// max_candidates is refused by checkCandidates, which must not be preempted
// by a memory estimate inflated by it.
func estimateCands(r *Spec, m *devices.ModelSpec) int {
	l := r.Policy.LES
	if r.Policy.Name != "les" || l != nil && l.NoPrefetch {
		return 0
	}
	n := m.TopK
	switch {
	case l == nil:
	case l.Threshold > 0 && l.MaxCandidates > 0:
		n = l.MaxCandidates
	case l.Threshold > 0:
		n = 2 * m.TopK
	case l.TopN > 0:
		n = l.TopN
	}
	return min(n, m.Experts)
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

// checkStreamMemory refuses to stream the trace at path for r when its run
// cannot fit.
func (in *Inputs) checkStreamMemory(path string, r *Spec) error {
	m, steps, err := traceFootprint(path)
	if err != nil {
		return err
	}
	window := 1
	if sp := r.Speculative; sp != nil {
		window = max(sp.Block, 1) // NB: 0 with the trace's passes
	}
	e := EstimateStreamMemory(m, steps, traceColumns(r), r.Policy.Name, estimateCands(r, &m.Model), window)
	return in.checkMemory("trace "+path, r.Policy.Name, e)
}

// checkFileMemory refuses to load the trace at path for r when its run
// cannot fit.
func (in *Inputs) checkFileMemory(path string, cols traces.Columns, r *Spec) error {
	m, steps, err := traceFootprint(path)
	if err != nil {
		return err
	}
	e := EstimateMemory(m, steps, cols, r.Policy.Name, estimateCands(r, &m.Model))
	return in.checkMemory("trace "+path, r.Policy.Name, e)
}
