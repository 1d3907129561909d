// Package experiment holds lessim's one description of a run, the Spec, and
// turns it into a simulation: every command (simulate, and the sweeps and
// ablations built on it) makes its runs from Specs, so a run is described,
// checked, hashed and reproduced the same way everywhere.
//
// # The spec
//
// A Spec is a plain, JSON-serializable value holding everything that decides
// a run's numbers: the model (for a synthetic trace), an optional type to
// re-quantize the model's routed experts to (expert_quant: the same routing,
// each expert's bytes in that type; the trace file's model too), the trace (a
// file with its SHA-256, or the synthetic generator's settings and seed), an optional
// stated lookahead predictor (its own seed), the device (an embedded name or
// a profile file, and once resolved the whole profile inline), the policy
// with the parameters that apply to it, the cache (as written and in bytes),
// the storage layout, cached-first, speculative decoding (its own acceptance
// seed, its drafter and what a draft token costs, or an acceptance estimated
// from the trace's recorded passes) or passes from the trace, prefill and
// context. Groups that do not
// apply are absent: Validate refuses, with the reason, a spec that sets
// something the run would ignore (a les parameter with another policy, a
// model with a trace file, a predictor for a trace that has scores, ...),
// and reports every problem at once, NaN and infinities included.
//
// Spec.Hash is the SHA-256 of the spec's canonical JSON (see Hash): equal
// specs hash alike whatever the field order or whitespace of their files.
//
// # From spec to result
//
// Inputs.Resolve checks a spec, loads or generates its trace and device and
// returns a Plan: the resolved spec (defaults filled, profile inline, trace
// digest, cache bytes; resolving it again changes nothing) and the sim.Config,
// policy parameters and trace steps sim.Run needs. Everything that can fail
// before the run fails there. Plan.Run simulates and returns an Outcome: the
// resolved spec, its hash and the sim.Result. Inputs keeps what it loaded, so
// the runs of a sweep share one copy of each trace; Run(spec) is the one-shot
// form.
//
// # Traces of any length
//
// A trace file whose steps would take more than Inputs.StreamAbove in memory
// (default 1 GiB, about 100,000 tokens of the 40-layer, top-8 shape) is not
// loaded: each run streams it (sim.RunSource) with only the columns it
// reads, so a sweep's runs share its digest and first-pass results but each
// reads the file again. When a run needs what only the rows tell (cache auto
// without a context size and no statistics in the footer, the prefill and
// spec-from-trace warnings, the future for oracle, belady and pinned-hot,
// or the statistics speculative decoding routes rejected drafts by), a
// first pass reads the expert column only (and the lookahead, for the
// drafts' recall, when the run reads it) and keeps what it found: the
// longest sequence, the counts behind the warnings, the policies.Future (2
// bytes per expert selection; oracle's next-use index adds 4) and the
// sim.DraftStats (8 bytes per expert). Streamed and loaded runs give the same Result byte for byte
// (tested). The memory a run needs is estimated before anything is loaded
// (EstimateMemory, EstimateStreamMemory) and a run that cannot fit is
// refused with the estimate. A stated predictor still needs the steps in
// memory.
//
// A synthetic trace streams the same way when its steps, with every column
// the generator makes (full lookahead vectors: about 40 KB per token of that
// shape, so above about 25,000 tokens), would take more than StreamAbove:
// each run (and a first pass, for the future) generates it again from its
// seed (traces.SynthSource, the same steps as traces.Synth), and the summary
// a first pass would find is known from the settings (synthSummary). Results
// are those of the generated-in-memory run, byte for byte (tested).
//
// # Options
//
// Options are the spec's settings by name (simulate's flag names): Apply and
// FromOptions set them on a spec, refusing, with the reason, an option the
// user set that does not apply to the rest of the spec. "Set" means given,
// whatever the value, so `--policy lru --top-n 0` is refused too. A spec file
// carries only what applies, so the same rules hold for both. There are no
// warnings for options: an option that does nothing is an error, because a
// warning would not survive reproducing the run from its spec. Settings the
// trace gives nothing to act on (--prefill on a trace without prefill,
// --spec-from-trace on one without multi-token passes, les on a trace
// without lookahead scores) are warnings in the result instead: the spec is
// right, the trace is what it is.
//
// Seeds: the synthetic trace, the stated predictor and speculative
// acceptance (which also draws rejected drafts' routing) each have their own (Synthetic.Seed, Predictor.Seed,
// Speculative.AcceptSeed). The option "seed" sets all three that are present
// (simulate's --seed kept that meaning); trace-seed, predict-seed and
// accept-seed set one each and win over seed.
package experiment
