package record

import (
	"fmt"
	"math"

	"github.com/lessim/lessim/policies"
)

// MaxContext bounds the prompt and decode tokens of one sequence, in the
// recorder and in the live engine alike: the llama.cpp context is sized to
// hold them, and 64 Ki tokens is far beyond the runs lessim measures
// (validate's default is 32) while keeping the KV cache of a small model in
// memory.
const MaxContext = 1 << 16

// MaxThreads bounds llama.cpp's compute threads. Each is an OS thread that
// spins on the graph; more threads than cores only slows decoding, and 256
// is above the core count of any machine lessim targets. ggml itself
// allows up to GGML_MAX_N_THREADS (512) but spawns every one it is given.
const MaxThreads = 256

// MaxTemperature bounds the sampling temperature. A language model's
// output logits span a few tens of units; divided by 10 they differ by a
// few units, so the sampler is already close to uniform, and larger values
// add nothing a trace could use (NaN and infinity abort llama.cpp's
// sampler).
const MaxTemperature = 10

// CheckDecodeTokens refuses n decode tokens that cannot fit MaxContext even
// after a one-token prompt. It needs no model, so callers check it before
// loading one.
func CheckDecodeTokens(n int) error {
	if n < 1 {
		return fmt.Errorf("tokens %d: want >= 1", n)
	}
	if n >= MaxContext {
		return fmt.Errorf("tokens %d: exceeds the %d-token context record and live allow (prompt and decode tokens together)", n, MaxContext)
	}
	return nil
}

// CheckContext refuses a prompt of prompt tokens followed by decode
// tokens that exceeds MaxContext (once the prompt is tokenized).
func CheckContext(prompt, decode int) error {
	if prompt+decode > MaxContext {
		return fmt.Errorf("the prompt has %d tokens; with %d decode tokens that exceeds the %d-token context record and live allow", prompt, decode, MaxContext)
	}
	return nil
}

// CheckThreads refuses a compute thread count outside 1..MaxThreads.
func CheckThreads(n int) error {
	if n < 1 || n > MaxThreads {
		return fmt.Errorf("threads %d: want 1..%d (each is an OS thread; more than the machine's cores only slows decoding)", n, MaxThreads)
	}
	return nil
}

// CheckTemperature refuses a sampling temperature that is not a finite
// number in [0, MaxTemperature].
func CheckTemperature(t float64) error {
	if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 || t > MaxTemperature {
		return fmt.Errorf("temperature %.4g: want a finite number in [0, %d] (0 = greedy)", t, MaxTemperature)
	}
	return nil
}

// CheckLookahead refuses a lookahead depth the model cannot score: depth d
// scores MoE layer i+d from layer i, so it must leave at least one layer
// (d < moeLayers). It is checked once the GGUF header is read, before
// llama.cpp loads the model.
func CheckLookahead(depth, moeLayers int) error {
	if depth == 0 {
		return nil
	}
	if err := policies.CheckDepthReach(depth, moeLayers); err != nil {
		return fmt.Errorf("lookahead %w", err)
	}
	return nil
}
