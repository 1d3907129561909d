// Package agent is lessim's device-agent protocol: a host (lessim live,
// calibrate, validate, agent check) asks an agent on a device (a phone app
// embedding llama.cpp, or `lessim agent` on this machine) to load a model,
// calibrate the device, record its model's routing or run one experiment, and
// gets the measurements back as they happen. docs/agent-protocol.md is the normative description; this
// package implements both sides.
//
// # Wire
//
// A connection is a byte stream (TCP, or a TCP port on an iOS device relayed
// by usbmuxd, see package usbmux) carrying frames: a 4-byte big-endian body
// length, then a JSON body {"type", "id", "payload"}. The length is checked
// against the limit (16 MiB at most) before anything is allocated. The
// client's first frame is hello with the protocol version and the agent's
// token (128 random bits printed by the agent at start, compared in constant
// time); the agent answers welcome with its capabilities, limits and
// DeviceFacts. Then the client sends requests (load_model, calibrate, record,
// run, ping, cancel), each with a fresh id that every reply echoes. record is
// answered with trace: a lessim trace file (Parquet bytes) of the routing the
// engine's runs see, which the client reads back completely (CheckTrace). A run streams
// one token frame per decode pass and ends with result (a sim.Result) or
// error; a run that asks for its per-token series (version 4, an engine with
// CapSeries: Client.RunSeries) gets every token with the series fields, a
// row of the engine's series (runtime/live's TokenSample).
//
// # Versions
//
// A connection speaks the version of the client's hello: the agent serves
// MinProtocolVersion (3) to ProtocolVersion (4) and answers in that version;
// the client asks for ProtocolVersion and connects again in version 3 when
// the agent refuses it (a version-3 agent). While a request runs the agent sends heartbeat frames, so a client
// can tell a long step from a dead agent.
//
// # Units
//
// Times are integer nanoseconds and sizes bytes, and field names say so
// (_ns, _bytes). Token samples are relative to the run's first decode pass.
//
// # Rules the server enforces
//
// One request holds the engine at a time (others get busy); a client that
// disconnects or cancels has its request's context cancelled and the server
// waits for the engine to return; every read and write has a deadline
// (handshake, per frame, idle); anything malformed gets an error frame and the
// connection is closed. The server only ever calls its Engine.
//
// # Engines
//
// Engine is the device side's inference engine. A run's spec is an
// experiment.Spec in JSON, read under the agent's rules (the agent's own
// device, synthetic traces only, the loaded model by default; see
// docs/agent-protocol.md). SimEngine serves lessim's simulator (results
// equal `lessim simulate --format json` for the same spec); LiveEngine
// (build tags llamacpp and linux) serves llama.cpp on this machine through
// runtime/live, calibrates with runtime/calibrate and records with
// runtime/record. An engine that serves fewer requests implements Capable;
// one that records implements Recorder.
package agent
