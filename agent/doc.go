// Package agent is lessim's device-agent protocol, both sides: a host
// (lessim live, calibrate, validate, agent check) asks an agent on a device
// (a phone app embedding llama.cpp, or `lessim agent` here) to load a model,
// calibrate the device, record its model's routing or run one experiment,
// and gets the measurements as they happen. docs/agent-protocol.md is the
// normative description.
//
// The wire is HTTP/1.1 over TCP or over a TCP port on an iOS device relayed
// by usbmuxd (package usbmux). Every request carries the agent's token
// (Authorization: Bearer, checked in constant time before any body is
// read). GET /v1/agent answers the Info; a POST of load_model, calibrate,
// record or run carries a JSON body and is answered with newline-delimited
// JSON Lines: heartbeats, a token per decode pass of a run, then the final
// line or an error with its code. Times are integer nanoseconds and sizes
// bytes (_ns, _bytes).
//
// The Server (net/http's, with Limits as its timeouts and body limit)
// gives the engine to one request at a time (others get 409 busy), cancels
// it when its client closes the request, and logs what a client sent only
// quoted. Engine is the device's inference engine: SimEngine serves
// lessim's simulator, LiveEngine (build tags llamacpp and linux) llama.cpp
// through runtime/live; Capable and Recorder say what else an engine does.
package agent
