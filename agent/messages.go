package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/lessim/lessim/sim"
)

// ProtocolVersion is the version of docs/agent-protocol.md this package
// speaks. A connection speaks one version: the client's hello names it, and
// the agent serves it when it lies in [MinProtocolVersion, ProtocolVersion]
// and answers the welcome in it.
const ProtocolVersion = 4

// MinProtocolVersion is the oldest version this package still speaks: its
// agent serves version-3 clients as a version-3 agent did, and its client
// falls back to version 3 when an agent refuses version 4 (a version-3
// agent), without per-token series (Client.RunSeries).
const MinProtocolVersion = 3

// Message types. docs/agent-protocol.md gives each one's payload and who
// sends it.
const (
	TypeHello       = "hello"        // client → agent: first frame, with the token
	TypeWelcome     = "welcome"      // agent → client: handshake accepted, device facts
	TypePing        = "ping"         // client → agent
	TypePong        = "pong"         // agent → client
	TypeLoadModel   = "load_model"   // client → agent
	TypeModelLoaded = "model_loaded" // agent → client
	TypeCalibrate   = "calibrate"    // client → agent
	TypeCalibration = "calibration"  // agent → client: a device profile
	TypeRun         = "run"          // client → agent: one experiment
	TypeToken       = "token"        // agent → client: one decode pass measured
	TypeResult      = "result"       // agent → client: the run's sim.Result
	TypeRecord      = "record"       // client → agent: record the routing of a greedy decode
	TypeTrace       = "trace"        // agent → client: the recorded trace file
	TypeCancel      = "cancel"       // client → agent: stop the request with this id
	TypeHeartbeat   = "heartbeat"    // agent → client: a request is still running
	TypeBusy        = "busy"         // agent → client: another request holds the engine
	TypeError       = "error"        // either way: code and message
)

var knownTypes = map[string]bool{
	TypeHello: true, TypeWelcome: true, TypePing: true, TypePong: true, TypeLoadModel: true,
	TypeModelLoaded: true, TypeCalibrate: true, TypeCalibration: true, TypeRun: true,
	TypeToken: true, TypeResult: true, TypeRecord: true, TypeTrace: true, TypeCancel: true, TypeHeartbeat: true,
	TypeBusy: true, TypeError: true,
}

func knownType(t string) bool { return knownTypes[t] }

// Error codes carried by error frames.
const (
	CodeBadFrame     = "bad_frame"     // not a frame or not a message (fatal)
	CodeTooLarge     = "too_large"     // frame above the size limit (fatal)
	CodeUnknownType  = "unknown_type"  // a type this version does not have (fatal)
	CodeUnexpected   = "unexpected"    // a known type at the wrong time or from the wrong side (fatal)
	CodeBadRequest   = "bad_request"   // a payload that does not decode or validate (fatal)
	CodeAuth         = "auth"          // wrong or missing token (fatal)
	CodeVersion      = "version"       // protocol versions differ (fatal)
	CodeTimeout      = "timeout"       // handshake, frame or idle deadline passed (fatal)
	CodeBusy         = "busy"          // the engine is running another request
	CodeInvalidSpec  = "invalid_spec"  // the engine refused the experiment spec
	CodeEngine       = "engine"        // the engine failed
	CodeCancelled    = "cancelled"     // the request was cancelled
	CodeNoSuchRun    = "no_such_run"   // cancel names no running request
	CodeShuttingDown = "shutting_down" // the agent is stopping
)

// Capabilities an agent may announce in its welcome.
const (
	CapLoadModel = "load_model"
	CapCalibrate = "calibrate"
	CapRun       = "run"
	CapCancel    = "cancel"
	CapRecord    = "record"
	// CapSeries (version 4): the engine measures per-token series and
	// sends them on a run that asks (Run.Series).
	CapSeries = "series"
)

// Hello is the client's first frame.
type Hello struct {
	ProtocolVersion int    `json:"protocol_version"`
	Token           string `json:"token"`
	Client          string `json:"client"` // free text, e.g. "lessim 0.1.0"
}

// Welcome is the agent's answer to a valid hello.
type Welcome struct {
	ProtocolVersion int         `json:"protocol_version"`
	Agent           string      `json:"agent"` // implementation and version
	Capabilities    []string    `json:"capabilities"`
	Device          DeviceFacts `json:"device"`
	Limits          WireLimits  `json:"limits"`
}

// WireLimits are the agent's limits as announced in its welcome.
type WireLimits struct {
	MaxFrameBytes      int   `json:"max_frame_bytes"`
	HandshakeTimeoutNS int64 `json:"handshake_timeout_ns"`
	FrameTimeoutNS     int64 `json:"frame_timeout_ns"`
	IdleTimeoutNS      int64 `json:"idle_timeout_ns"`
	HeartbeatNS        int64 `json:"heartbeat_ns"`
}

// DeviceFacts describe the device an agent runs on (or, for a simulating
// engine, the device it simulates: Kind says which).
type DeviceFacts struct {
	Kind          string `json:"kind"`       // "measured" (a real engine) or "simulated"
	Model         string `json:"model"`      // device model name, e.g. "iPhone17,2"
	OS            string `json:"os"`         // e.g. "iOS 26.1", "linux 6.1"
	CPU           string `json:"cpu"`        // e.g. "Apple A19 Pro", "x86_64, 2 cores"
	Cores         int    `json:"cores"`      // logical CPUs
	RAMBytes      int64  `json:"ram_bytes"`  // physical RAM
	PageBytes     int64  `json:"page_bytes"` // VM page size
	Engine        string `json:"engine"`     // e.g. "llama.cpp b6000", "lessim-sim 0.1.0"
	EngineVersion string `json:"engine_version"`
}

// Fact kinds.
const (
	KindMeasured  = "measured"
	KindSimulated = "simulated"
)

// ModelInfo is what an engine reports after loading a model.
type ModelInfo struct {
	Name             string `json:"name"`
	Arch             string `json:"arch"`
	Layers           int    `json:"layers"` // MoE layers
	Experts          int    `json:"experts"`
	TopK             int    `json:"top_k"`
	TotalExpertBytes int64  `json:"total_expert_bytes"`
	FileBytes        int64  `json:"file_bytes,omitempty"` // the model file, when there is one
}

// LoadModel asks the engine to load a model. What Model names is the
// engine's business (a GGUF path on the device, a built-in spec name); an
// engine refuses anything outside what it serves.
type LoadModel struct {
	Model string `json:"model"`
}

// Calibrate asks the engine to measure the device; Options are
// engine-defined (null or {} for the defaults).
type Calibrate struct {
	Options json.RawMessage `json:"options,omitempty"`
}

// Calibration is a measured device profile, as YAML that
// devices.ParseProfile accepts.
type Calibration struct {
	ProfileYAML string `json:"profile_yaml"`
}

// Run asks for one experiment. Spec is the experiment spec as JSON, opaque
// to the protocol and validated by the engine. Series (version 4, an
// engine with CapSeries) asks for the run's per-token series: every token
// frame then carries the series fields (TokenSample.ComputeNS and the
// others after it).
type Run struct {
	Spec   json.RawMessage `json:"spec"`
	Series bool            `json:"series,omitempty"`
}

// TokenSample is one decode pass as measured (or simulated): streamed while
// the run goes. Times are nanoseconds since the run's first decode pass
// started, sizes bytes. Optional fields are absent when not measured.
type TokenSample struct {
	Pass    int64 `json:"pass"`     // 0-based decode pass
	Tokens  int   `json:"tokens"`   // tokens the pass emitted (accepted), >= 1
	StartNS int64 `json:"start_ns"` // when the pass started
	TimeNS  int64 `json:"time_ns"`  // how long it took
	StallNS int64 `json:"stall_ns"` // of which the compute thread waited for experts

	ReadBytes     *int64 `json:"read_bytes,omitempty"`     // expert bytes read from flash
	Reads         *int64 `json:"reads,omitempty"`          // expert reads issued
	Hits          *int64 `json:"hits,omitempty"`           // expert uses resident at top-k
	Misses        *int64 `json:"misses,omitempty"`         // expert uses demand-loaded
	ResidentBytes *int64 `json:"resident_bytes,omitempty"` // expert bytes resident at the pass's end

	// The series fields (version 4): present exactly when the run asked for
	// its series (Run.Series), with the optional fields above they are a
	// row of the engine's per-token series (runtime/live's TokenSample,
	// the file lessim live --series writes).
	ComputeNS     *int64 `json:"compute_ns,omitempty"`     // of time_ns, the part not stalled: time_ns − stall_ns
	InflightHits  *int64 `json:"inflight_hits,omitempty"`  // expert uses found still loading (a prefetch in flight)
	PrefetchLoads *int64 `json:"prefetch_loads,omitempty"` // loads the policy asked for ahead of use
	MajorFaults   *int64 `json:"major_faults,omitempty"`   // the process's major page faults during the pass
	StrayBytes    *int64 `json:"stray_bytes,omitempty"`    // expert bytes resident that the cache holds absent (stock page faults)
}

// seriesFields are the series fields of s, by JSON name, in field order.
func (s *TokenSample) seriesFields() []namedField {
	return []namedField{{"compute_ns", s.ComputeNS}, {"inflight_hits", s.InflightHits}, {"prefetch_loads", s.PrefetchLoads},
		{"major_faults", s.MajorFaults}, {"stray_bytes", s.StrayBytes}}
}

// ptr returns a pointer to a copy of v (for the optional sample fields).
func ptr[T any](v T) *T { return &v }

// namedField is an optional sample field and its JSON name.
type namedField struct {
	n string
	v *int64
}

// HasSeries reports whether any series field is present.
func (s *TokenSample) HasSeries() bool {
	for _, f := range s.seriesFields() {
		if f.v != nil {
			return true
		}
	}
	return false
}

// MissingSeries names the first series field s lacks ("" when it has all:
// a row of a per-token series).
func (s *TokenSample) MissingSeries() string {
	for _, f := range s.seriesFields() {
		if f.v == nil {
			return f.n
		}
	}
	return ""
}

// WithoutSeries is s with the series fields removed: what a run that did
// not ask for its series streams.
func (s TokenSample) WithoutSeries() TokenSample {
	s.ComputeNS, s.InflightHits, s.PrefetchLoads, s.MajorFaults, s.StrayBytes = nil, nil, nil, nil, nil
	return s
}

// MaxRecordTokens bounds a record request's decode tokens.
const MaxRecordTokens = 4096

// Record asks the engine to record the routing of Tokens greedy decode
// tokens after its run prompt: the routing its runs of that many tokens
// see (a host simulates it, see lessim validate --target).
type Record struct {
	Tokens int `json:"tokens"`
}

// Validate checks a record request.
func (r *Record) Validate() error {
	if r.Tokens < 1 || r.Tokens > MaxRecordTokens {
		return fmt.Errorf("tokens %d: want 1..%d", r.Tokens, MaxRecordTokens)
	}
	return nil
}

// TracePayload carries a recorded trace: the bytes of a lessim trace file
// (Parquet, docs/trace-format.md), base64 in JSON.
type TracePayload struct {
	Parquet []byte `json:"parquet"`
}

// ResultPayload carries a finished run's result.
type ResultPayload struct {
	Result *sim.Result `json:"result"`
}

// ErrorPayload is an error frame's payload.
type ErrorPayload struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BusyPayload says what holds the engine.
type BusyPayload struct {
	Message string `json:"message"`
}

// Heartbeat says a request is still running.
type Heartbeat struct {
	ElapsedNS int64 `json:"elapsed_ns"`
}

// maxTextBytes bounds the free-text fields of payloads.
const maxTextBytes = 4096

// validText checks a free-text field: bounded, valid UTF-8.
func validText(name, s string) error {
	if len(s) > maxTextBytes {
		return fmt.Errorf("%s: %d bytes (at most %d)", name, len(s), maxTextBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: not valid UTF-8", name)
	}
	return nil
}

// Validate checks a welcome as a client receives it.
func (w *Welcome) Validate() error {
	for _, f := range []struct{ n, v string }{{"agent", w.Agent}, {"device.kind", w.Device.Kind}, {"device.model", w.Device.Model},
		{"device.os", w.Device.OS}, {"device.cpu", w.Device.CPU}, {"device.engine", w.Device.Engine}, {"device.engine_version", w.Device.EngineVersion}} {
		if err := validText(f.n, f.v); err != nil {
			return err
		}
	}
	if len(w.Capabilities) > 64 {
		return fmt.Errorf("capabilities: %d entries (at most 64)", len(w.Capabilities))
	}
	if w.Device.Kind != KindMeasured && w.Device.Kind != KindSimulated {
		return fmt.Errorf("device.kind %q: want %q or %q", clip(w.Device.Kind, 40), KindMeasured, KindSimulated)
	}
	if w.Device.RAMBytes <= 0 || w.Device.PageBytes <= 0 || w.Device.PageBytes&(w.Device.PageBytes-1) != 0 {
		return fmt.Errorf("device: ram_bytes %d and page_bytes %d must be positive, page_bytes a power of two", w.Device.RAMBytes, w.Device.PageBytes)
	}
	l := w.Limits
	if l.MaxFrameBytes <= 0 || l.HeartbeatNS <= 0 || l.IdleTimeoutNS <= 0 || l.HandshakeTimeoutNS <= 0 || l.FrameTimeoutNS <= 0 {
		return fmt.Errorf("limits: every limit must be positive (%+v)", l)
	}
	return nil
}

// Validate checks a token sample's units and internal consistency.
func (s *TokenSample) Validate() error {
	if s.Pass < 0 || s.Tokens < 1 || s.StartNS < 0 || s.TimeNS <= 0 || s.StallNS < 0 {
		return fmt.Errorf("pass %d: need pass >= 0, tokens >= 1, start_ns >= 0, time_ns > 0, stall_ns >= 0 (got tokens %d, start_ns %d, time_ns %d, stall_ns %d)",
			s.Pass, s.Tokens, s.StartNS, s.TimeNS, s.StallNS)
	}
	if s.StallNS > s.TimeNS {
		return fmt.Errorf("pass %d: stall_ns %d exceeds time_ns %d", s.Pass, s.StallNS, s.TimeNS)
	}
	if s.StartNS > math.MaxInt64-s.TimeNS {
		return fmt.Errorf("pass %d: start_ns + time_ns overflows", s.Pass)
	}
	fields := append([]namedField{{"read_bytes", s.ReadBytes}, {"reads", s.Reads}, {"hits", s.Hits}, {"misses", s.Misses},
		{"resident_bytes", s.ResidentBytes}}, s.seriesFields()...)
	for _, f := range fields {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("pass %d: %s %d is negative", s.Pass, f.n, *f.v)
		}
	}
	if s.ComputeNS != nil && *s.ComputeNS > s.TimeNS {
		return fmt.Errorf("pass %d: compute_ns %d exceeds time_ns %d", s.Pass, *s.ComputeNS, s.TimeNS)
	}
	if s.Reads != nil && s.ReadBytes != nil && *s.Reads > 0 && *s.ReadBytes == 0 {
		return fmt.Errorf("pass %d: %d reads of 0 bytes", s.Pass, *s.Reads)
	}
	return nil
}
