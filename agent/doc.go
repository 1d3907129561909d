// Package agent is lessim's device-agent protocol: a host (lessim live,
// calibrate, validate, agent check) asks an agent on a device (a phone app
// embedding llama.cpp, or `lessim agent` on this machine) to load a model,
// calibrate the device, record its model's routing or run one experiment,
// and gets the measurements back as they happen. docs/agent-protocol.md is
// the normative description; this package implements both sides.
//
// # Wire
//
// HTTP/1.1 over TCP, or over a TCP port on an iOS device relayed by
// usbmuxd (package usbmux). Every request carries the agent's token
// (Authorization: Bearer, 128 random bits printed by the agent at start,
// compared in constant time before any body is read). GET /v1/agent
// answers the agent's Info (capabilities, DeviceFacts, Limits); a POST of
// load_model, calibrate, record or run carries a JSON body and is answered
// with newline-delimited JSON Lines: heartbeats while it runs, one token
// per decode pass of a run, then the final line (result, model,
// calibration, trace) or an error with its code. Times are integer
// nanoseconds and sizes bytes, and field names say so (_ns, _bytes).
//
// # Rules the server enforces
//
// One request holds the engine at a time (others get 409 busy); a client
// closing its request cancels the engine's context and the engine is free
// once it returns; net/http's server applies the Limits (header, request
// and per-line write timeouts, body size), so silent or unauthenticated
// connections cost their headers and keep no one out. The server only ever
// calls its Engine, and logs what a client sent only quoted.
//
// # Engines
//
// Engine is the device side's inference engine; a run's spec is an
// experiment.Spec in JSON, read under the agent's rules (its own device,
// synthetic traces only, the loaded model by default). SimEngine serves
// lessim's simulator (results equal `lessim simulate --format json`);
// LiveEngine (build tags llamacpp and linux) serves llama.cpp on this
// machine through runtime/live. An engine that serves fewer requests
// implements Capable; one that records implements Recorder.
package agent
