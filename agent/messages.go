package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// The agent's HTTP paths (docs/agent-protocol.md).
const (
	PathAgent     = "/v1/agent"
	PathLoadModel = "/v1/load_model"
	PathCalibrate = "/v1/calibrate"
	PathRecord    = "/v1/record"
	PathRun       = "/v1/run"
)

// Error codes, with the HTTP status (statusOf) of one that ends a request
// before its first line.
const (
	CodeBadRequest  = "bad_request"  // 400: a body that does not decode or validate; 405: a wrong method
	CodeAuth        = "auth"         // 401: wrong or missing token
	CodeNotFound    = "not_found"    // 404: no such path
	CodeTimeout     = "timeout"      // 408: the body did not arrive in time
	CodeBusy        = "busy"         // 409: the engine is running another request
	CodeTooLarge    = "too_large"    // 413: a body above the limit
	CodeInvalidSpec = "invalid_spec" // 422: the engine refused the spec, model name or options
	CodeEngine      = "engine"       // 500: the engine failed
	CodeCancelled   = "cancelled"    // 503: the request was cancelled (or the agent is stopping)
)

// statusOf is the HTTP status of an error answered before any line.
var statusOf = map[string]int{CodeBadRequest: 400, CodeAuth: 401, CodeNotFound: 404, CodeTimeout: 408, CodeBusy: 409,
	CodeTooLarge: 413, CodeInvalidSpec: 422, CodeEngine: 500, CodeCancelled: 503}

// Capabilities an agent may announce in its Info.
const (
	CapLoadModel = "load_model"
	CapCalibrate = "calibrate"
	CapRun       = "run"
	CapCancel    = "cancel" // closing a request stops the engine (every agent must)
	CapRecord    = "record"
	CapSeries    = "series" // the engine measures per-token series, sent on a run that asks (Run.Series)
)

// Info is the answer to GET PathAgent: what the agent is and serves.
type Info struct {
	Agent        string      `json:"agent"` // implementation and version
	Capabilities []string    `json:"capabilities"`
	Device       DeviceFacts `json:"device"`
	Limits       Limits      `json:"limits"`
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

	// What a measuring agent on Linux or Android reads from the system
	// where it can (omitted otherwise): each logical CPU's maximum
	// frequency in MHz, in CPU order, comma-separated, 0 where unreadable
	// ("1800,1800,2400,3200"); the memory the system reports available
	// (MemAvailable) and its thermal zones' temperatures in °C
	// ("TYPE=TEMP,...") when the connection opened.
	CoreMaxMHz        string `json:"core_max_mhz,omitempty"`
	MemAvailableBytes int64  `json:"mem_available_bytes,omitempty"`
	Thermal           string `json:"thermal,omitempty"`
}

// Fact kinds.
const (
	KindMeasured, KindSimulated = "measured", "simulated"
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

// LoadModel is the body of POST PathLoadModel. What Model names is the
// engine's business (a GGUF on the device, a built-in spec name); an engine
// refuses anything outside what it serves.
type LoadModel struct {
	Model string `json:"model"`
}

// Calibrate is the body of POST PathCalibrate; Options are engine-defined
// (absent, null or {} for the defaults).
type Calibrate struct {
	Options json.RawMessage `json:"options,omitempty"`
}

// Calibration is a measured device profile as YAML.
type Calibration struct {
	ProfileYAML string `json:"profile_yaml"`
}

// Run is the body of POST PathRun. Spec is the experiment spec, a JSON
// object validated by the engine. Series (an engine with CapSeries) asks
// for the run's per-token series: every token line then carries the series
// fields (TokenSample.ComputeNS and the others after it).
type Run struct {
	Spec   json.RawMessage `json:"spec"`
	Series bool            `json:"series,omitempty"`
}

// MaxRecordTokens bounds a record request's decode tokens.
const MaxRecordTokens = 4096

// Record is the body of POST PathRecord: record the routing of Tokens
// greedy decode tokens after the engine's run prompt.
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

// TracePayload carries a lessim trace file (base64 in JSON).
type TracePayload struct {
	Parquet []byte `json:"parquet"`
}

// Line is one line of an answer: exactly one field is set. A request's
// answer is heartbeat lines while it runs (and token lines for a run), then
// one final line: result, model, calibration, trace or error. Result is a
// sim.Result, kept raw so that a reader ignores fields it does not know.
type Line struct {
	Token       *TokenSample    `json:"token,omitempty"`
	Heartbeat   *Heartbeat      `json:"heartbeat,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Model       *ModelInfo      `json:"model,omitempty"`
	Calibration *Calibration    `json:"calibration,omitempty"`
	Trace       *TracePayload   `json:"trace,omitempty"`
	Error       *ErrorBody      `json:"error,omitempty"`
}

func (l *Line) fields() (n int) {
	for _, set := range []bool{l.Token != nil, l.Heartbeat != nil, l.Result != nil, l.Model != nil, l.Calibration != nil, l.Trace != nil, l.Error != nil} {
		n += map[bool]int{true: 1}[set]
	}
	return n
}

// ErrorBody is an error: a Code* constant and a message.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Heartbeat says a request is still running.
type Heartbeat struct {
	ElapsedNS int64 `json:"elapsed_ns"`
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

	// The series fields: present exactly when the run asked for its series
	// (Run.Series); with the optional fields above they are a row of the
	// engine's per-token series (runtime/live's TokenSample, the file
	// lessim live --series writes).
	ComputeNS     *int64 `json:"compute_ns,omitempty"`     // of time_ns, the part not stalled: time_ns − stall_ns
	InflightHits  *int64 `json:"inflight_hits,omitempty"`  // expert uses found still loading (a prefetch in flight)
	PrefetchLoads *int64 `json:"prefetch_loads,omitempty"` // loads the policy asked for ahead of use
	MajorFaults   *int64 `json:"major_faults,omitempty"`   // the process's major page faults during the pass
	StrayBytes    *int64 `json:"stray_bytes,omitempty"`    // expert bytes resident that the cache holds absent (stock page faults)
}

func (s *TokenSample) seriesFields() []namedField {
	return []namedField{{"compute_ns", s.ComputeNS}, {"inflight_hits", s.InflightHits}, {"prefetch_loads", s.PrefetchLoads},
		{"major_faults", s.MajorFaults}, {"stray_bytes", s.StrayBytes}}
}

func ptr[T any](v T) *T { return &v }

type namedField struct {
	n string
	v *int64
}

// HasSeries reports whether any series field is present.
func (s *TokenSample) HasSeries() bool { return *s != s.WithoutSeries() }

// MissingSeries names the first series field s lacks ("" when none).
func (s *TokenSample) MissingSeries() string {
	for _, f := range s.seriesFields() {
		if f.v == nil {
			return f.n
		}
	}
	return ""
}

// WithoutSeries is s with the series fields removed.
func (s TokenSample) WithoutSeries() TokenSample {
	s.ComputeNS, s.InflightHits, s.PrefetchLoads, s.MajorFaults, s.StrayBytes = nil, nil, nil, nil, nil
	return s
}

// Validate checks a token sample's units and internal consistency.
func (s *TokenSample) Validate() error {
	switch {
	case s.Pass < 0 || s.Tokens < 1 || s.StartNS < 0 || s.TimeNS <= 0 || s.StallNS < 0:
		return fmt.Errorf("pass %d: need pass >= 0, tokens >= 1, start_ns >= 0, time_ns > 0, stall_ns >= 0 (got tokens %d, start_ns %d, time_ns %d, stall_ns %d)",
			s.Pass, s.Tokens, s.StartNS, s.TimeNS, s.StallNS)
	case s.StallNS > s.TimeNS:
		return fmt.Errorf("pass %d: stall_ns %d exceeds time_ns %d", s.Pass, s.StallNS, s.TimeNS)
	case s.StartNS > math.MaxInt64-s.TimeNS:
		return fmt.Errorf("pass %d: start_ns + time_ns overflows", s.Pass)
	case s.ComputeNS != nil && *s.ComputeNS > s.TimeNS:
		return fmt.Errorf("pass %d: compute_ns %d exceeds time_ns %d", s.Pass, *s.ComputeNS, s.TimeNS)
	case s.Reads != nil && s.ReadBytes != nil && *s.Reads > 0 && *s.ReadBytes == 0:
		return fmt.Errorf("pass %d: %d reads of 0 bytes", s.Pass, *s.Reads)
	}
	for _, f := range append([]namedField{{"read_bytes", s.ReadBytes}, {"reads", s.Reads}, {"hits", s.Hits}, {"misses", s.Misses},
		{"resident_bytes", s.ResidentBytes}}, s.seriesFields()...) {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("pass %d: %s %d is negative", s.Pass, f.n, *f.v)
		}
	}
	return nil
}

// maxTextBytes bounds the free-text fields (a model name, a message).
const maxTextBytes = 4096

// Validate checks an Info as a client receives it (its text is bounded by
// the size of the answer, 1 MiB).
func (in *Info) Validate() error {
	switch d := in.Device; {
	case len(in.Capabilities) > 64:
		return fmt.Errorf("capabilities: %d entries (at most 64)", len(in.Capabilities))
	case d.Kind != KindMeasured && d.Kind != KindSimulated:
		return fmt.Errorf("device.kind %q: want %q or %q", clip(d.Kind, 40), KindMeasured, KindSimulated)
	case d.RAMBytes <= 0 || d.PageBytes <= 0 || d.PageBytes&(d.PageBytes-1) != 0:
		return fmt.Errorf("device: ram_bytes %d and page_bytes %d must be positive, page_bytes a power of two", d.RAMBytes, d.PageBytes)
	}
	return in.Limits.Validate()
}

// decodeStrict decodes one JSON value, refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// RemoteError is an error the agent answered.
type RemoteError struct {
	Code    string
	Message string
}

// Error implements error.
func (e *RemoteError) Error() string {
	if e.Message == "" {
		return "agent: " + e.Code
	}
	return "agent: " + e.Code + ": " + e.Message
}

// Is matches any RemoteError with the same code, so errors.Is(err, ErrBusy)
// works on errors from the wire.
func (e *RemoteError) Is(target error) bool {
	t, ok := target.(*RemoteError)
	return ok && t.Code == e.Code
}

// Errors a client can test for with errors.Is.
var (
	ErrAuth      = &RemoteError{Code: CodeAuth}        // the agent refused the token
	ErrBusy      = &RemoteError{Code: CodeBusy}        // the agent is running another request
	ErrCancelled = &RemoteError{Code: CodeCancelled}   // the agent stopped the request
	ErrRefused   = &RemoteError{Code: CodeInvalidSpec} // the engine refused the request (spec, model or options)

	ErrUnreachable = errors.New("agent unreachable")        // no connection to the target could be opened
	ErrSilent      = errors.New("agent stopped answering")  // no line, not even a heartbeat, within the silence limit
	ErrBadAgent    = errors.New("agent broke the protocol") // the agent sent what the protocol does not allow
	ErrNotAgent    = errors.New("not a lessim agent")       // what answers is not HTTP, or HTTP without an agent's answer
)
