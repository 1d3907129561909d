// Package ablation builds and runs the stepwise Lookahead Expert Scheduling
// (LES) ablation: the publisher's sequence of changes from stock llama.cpp to
// the full mechanism, each step one experiment.Spec.
//
// # The steps
//
// Every step is the previous step's spec with named option changes, applied
// through experiment.Apply, so the option rules that refuse a setting that
// does not apply hold here as in simulate, and nothing is a per-step
// constant: the model, device, policies and their defaults come from the
// same registries as every other run.
//
//	(1) stock       policy ondemand, layout gguf-mmap, cached-first false, variant q4_k_m
//	(2) lookahead   policy les (its defaults: the model's top-k next-layer candidates, depth 1)
//	(3) storage     layout per-expert, cached-first true
//	(4) mixed       expert-quant Q3_K (experts re-quantized to Q3_K, the rest as the model has it)
//	(5) speculative spec-block B, spec-accept A, accept-seed S, drafter D
//
// A reference row (oracle: the true next-layer experts prefetched, Belady
// eviction, on the last step's settings) follows. It is a hit-rate
// reference, not a throughput bound: oracle reads every expert the next
// layer needs as early as it can, which can cost more flash time than a
// policy that reads less. The classic demand-admit Belady (MIN) is policy
// belady; the ablation has no row for it (run simulate --policy belady on
// any step's settings).
//
// With Settings.LeaveOneOut, leave-one-out rows follow: for each step
// strictly between the first and the last that ran, the base with every other
// step's changes applied in order but not its own, compared with the last
// step (VsPrevious is over it). A stepwise ablation credits a step with its
// gain at its place in the order; these rows show what the finished
// configuration owes each step, interactions included. (Leaving out the last
// step gives the step before it; the first step is the base itself.)
//
// Step 4 re-quantizes the experts of whatever model the run uses
// (experiment.Spec.ExpertQuant): a built-in model's Q4_K_M variant, or the
// model a trace file's metadata holds, with every expert's bytes those of its
// weights in Q3_K. Routing does not depend on the quant, so a trace recorded
// from a Q4_K_M model replays as the same routing with smaller experts. On
// the built-in MiniCPM-V 4.7 this is exactly its mixed-q3k-experts variant
// (the same layers, results byte for byte).
//
// A step whose change cannot be expressed for the inputs is skipped with the
// reason: step 4 when the run's model cannot be re-quantized (a trace's
// model that does not state its experts' matrix shape, hidden and
// expert_ffn, as an imported route trace; experts that are Q3_K already).
// The next step then builds on the last step that ran, and its speedup is
// over that step. A cache given as a percentage is a share of each step's
// own expert bytes, so step 4 shrinks it; give it in bytes to hold it fixed.
//
// Speculative defaults (block 4, acceptance 0.7) are experiment's
// DefaultSpeculative, and the default drafter is the model's own
// multi-token-prediction head (DefaultDrafter: each draft runs one more of the
// target's MoE layers and its output head). They are assumed, not measured:
// no public acceptance figure or size of the publisher's block drafter
// (DSpark) was found. Pass your drafter's numbers with --spec-block,
// --spec-accept and --drafter (explicit with --drafter-bytes and
// --drafter-flops per draft token).
//
// # Running
//
// Run resolves every step through one experiment.Inputs, so steps of the same
// model variant share one loaded (or generated) trace, then runs the plans in
// parallel. Results are kept in step order, so output is deterministic. Each
// row carries its resolved spec and hash: `lessim simulate --spec` on a row's
// spec reproduces its result byte for byte.
//
// # Units
//
// Tokens per second of decode (accepted tokens ÷ decode time); speedups are
// ratios of tokens per second; stall share is StallNS ÷ TimeNS; flash bytes
// per token are bytes read from flash ÷ accepted decode tokens (see
// docs/metrics.md).
package ablation
