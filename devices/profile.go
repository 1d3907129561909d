package devices

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lessim/lessim/internal/textin"
	"github.com/lessim/lessim/internal/yamlin"
)

// Profile is a device profile as written in YAML: every number keeps the text
// it was written with and its source. Profile.Device resolves it into the plain
// SI numbers the simulator uses.
type Profile struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Calibration string         `yaml:"calibration"`
	Memory      MemorySection  `yaml:"memory"`
	Compute     ComputeSection `yaml:"compute"`
	Flash       FlashSection   `yaml:"flash"`
	Backend     Quantity       `yaml:"backend,omitempty"` // optional: cpu (default) or gpu, with its source

	file     string   // file name used in messages
	raw      []byte   // the YAML as read, comments included
	problems []string // decode-time problems (unknown keys, wrong shapes)
}

// MemorySection is the DRAM part of a profile.
type MemorySection struct {
	RAM        Quantity `yaml:"ram"`        // physical RAM (size)
	Reserve    Quantity `yaml:"reserve"`    // OS, other apps, runtime: not for the model (size)
	Bandwidth  Quantity `yaml:"bandwidth"`  // peak DRAM bandwidth (rate)
	Efficiency Quantity `yaml:"efficiency"` // fraction of peak decode reaches, in (0,1]
	// AppLimit (optional) is the memory the OS lets the app keep resident
	// (iOS: the jetsam limit), distinct from RAM; Runtime (optional, only
	// with AppLimit) is the app's own memory besides the model's.
	AppLimit Quantity `yaml:"app_limit,omitempty"`
	Runtime  Quantity `yaml:"runtime,omitempty"`
	// Growth (optional, only with AppLimit) is what the app's footprint
	// grows by per token processed besides the KV cache (page cache the
	// kernel keeps for it): stated, the footprint is counted pass by pass.
	Growth Quantity `yaml:"growth,omitempty"`
	// FormatEfficiency (optional) is Efficiency by the ggml type of the
	// weights read ("Q4_K", "MXFP4"): a type it names is charged at its own
	// efficiency, every other at Efficiency.
	FormatEfficiency map[string]Quantity `yaml:"format_efficiency,omitempty"`
}

// ComputeSection is the processor part of a profile.
type ComputeSection struct {
	FLOPS         Quantity `yaml:"flops"`          // sustained matmul throughput
	LayerOverhead Quantity `yaml:"layer_overhead"` // fixed time per layer (dispatch, sync)
	// LoadFixed and LoadRate (optional) are the compute thread's cost of
	// loading one expert: LoadFixed per load plus its bytes at LoadRate.
	LoadFixed Quantity `yaml:"load_fixed,omitempty"`
	LoadRate  Quantity `yaml:"load_rate,omitempty"`
	// Threads (optional) is the number of compute threads that split each
	// matmul's rows; GPUSync (optional, backend gpu only) is one host–device
	// synchronisation.
	Threads Quantity `yaml:"threads,omitempty"`
	GPUSync Quantity `yaml:"gpu_sync,omitempty"`
	// Cores (optional) is the cores the compute threads and the I/O lanes
	// share: stated, they contend for them (sim: cores.go). Parallel
	// (optional) is the share of compute that splits over the threads
	// (stated, the compute numbers are one thread's). PredictCost
	// (optional) is the compute thread's time per layer and token of a
	// lookahead router on the CPU backend.
	Cores       Quantity `yaml:"cores,omitempty"`
	Background  Quantity `yaml:"background,omitempty"` // runnable threads of other work on the cores
	Parallel    Quantity `yaml:"parallel,omitempty"`
	PredictCost Quantity `yaml:"predict_cost,omitempty"`
	// ThreadOverhead (optional) is what each compute thread beyond the
	// first adds to every layer of a token (the threads' synchronisation
	// when the engine's hooks split the graph).
	ThreadOverhead Quantity `yaml:"thread_overhead,omitempty"`
	// DraftToken and DraftBytes (optional, together) are a draft model's
	// measured time per draft token and the weight bytes it reads per token
	// (calibrate --draft-model): a model drafter of those bytes is charged
	// the time instead of its weights' estimate.
	DraftToken Quantity `yaml:"draft_token,omitempty"`
	DraftBytes Quantity `yaml:"draft_bytes,omitempty"`
	// PassScale (optional) is, by tokens per pass ("2", "4", "8"), what one
	// token of a pass that long costs in FLOP time relative to a one-token
	// pass (calibrate measures it: a speculative verify pass).
	PassScale map[string]Quantity `yaml:"pass_scale,omitempty"`
}

// FlashSection is the storage part of a profile.
//
// Curve points are what a read benchmark reports: the total throughput of
// back-to-back reads of one size with a given number of reads in flight
// (lanes × size ÷ time per read, request latency included). Profile.Device
// turns each point into the transfer rate the simulator uses by removing the
// latency (see the package documentation).
type FlashSection struct {
	Lanes      Quantity      `yaml:"lanes"`       // reads in flight at once (engine queue depth)
	Latency    Quantity      `yaml:"latency"`     // per-request latency before the transfer
	SingleLane []CurveSample `yaml:"single_lane"` // one outstanding read, by read size
	Aggregate  []CurveSample `yaml:"aggregate"`   // saturated device, by read size
	PageSize   Quantity      `yaml:"page_size"`   // OS page size
	ReadAhead  Quantity      `yaml:"read_ahead"`  // mmap fault read-ahead window
	FaultCost  Quantity      `yaml:"fault_cost"`  // CPU time of one page fault
	// ReadAheadAsync (optional) is the asynchronous read-ahead a sequential
	// mmap fault triggers beyond its read-around window.
	ReadAheadAsync Quantity `yaml:"read_ahead_async,omitempty"`
	// ThermalFloor and ThermalBytes (optional, together) derate bandwidth
	// under sustained reads: the fraction of cold bandwidth left when hot, and
	// the bytes read over which about 63% of the drop has happened.
	ThermalFloor Quantity `yaml:"thermal_floor,omitempty"`
	ThermalBytes Quantity `yaml:"thermal_bytes,omitempty"`
	// ReadCPU and CopyRate (optional) are what a read costs the CPU of the
	// lane that issues it: ReadCPU per request (system call, submission,
	// completion) and its bytes copied into the cache at CopyRate (absent:
	// placed directly, no copy).
	ReadCPU  Quantity `yaml:"read_cpu,omitempty"`
	CopyRate Quantity `yaml:"copy_rate,omitempty"`
}

// Quantity is one profile number: its value as written (a number, or a number
// with a unit) and where it comes from. A Source starting with "assumed:" marks
// an assumption and says why; anything else is a citation.
type Quantity struct {
	Value  string `yaml:"value"`
	Source string `yaml:"source"`

	line    int      // line in the file, 0 when unknown
	set     bool     // present in the file
	unknown []string // unexpected keys inside the mapping
	shape   string   // non-empty when the node was not a {value, source} mapping
}

// CurveSample is one curve point as written: a read size, the number of reads
// in flight when it was measured (Lanes; empty means 1, and single-lane points
// must be 1), the measured total throughput, and its source.
type CurveSample struct {
	Read      string `yaml:"read"`
	Lanes     string `yaml:"lanes,omitempty"`
	Bandwidth string `yaml:"bandwidth"`
	Source    string `yaml:"source"`

	line    int
	unknown []string
	shape   string
}

// AssumedPrefix starts the source of every value that is an assumption.
const AssumedPrefix = "assumed:"

// IsAssumed reports whether a source marks its value as an assumption.
func IsAssumed(source string) bool {
	return strings.HasPrefix(strings.TrimSpace(source), AssumedPrefix)
}

// UnmarshalYAML reads a {value, source} mapping. It never fails, so that
// decoding goes on and Validate can report every problem at once; problems are
// kept and reported by Validate with the field path.
func (q *Quantity) UnmarshalYAML(n *yaml.Node) error {
	*q = Quantity{line: n.Line, set: true}
	decodeFields(n, "{value: ..., source: ...}", map[string]*string{"value": &q.Value, "source": &q.Source}, &q.shape, &q.unknown)
	return nil
}

// UnmarshalYAML reads a {read, lanes, bandwidth, source} mapping; like
// Quantity's, it never fails and leaves problems to Validate.
func (c *CurveSample) UnmarshalYAML(n *yaml.Node) error {
	*c = CurveSample{line: n.Line}
	decodeFields(n, "{read: ..., lanes: ..., bandwidth: ..., source: ...}",
		map[string]*string{"read": &c.Read, "lanes": &c.Lanes, "bandwidth": &c.Bandwidth, "source": &c.Source}, &c.shape, &c.unknown)
	return nil
}

// decodeFields reads a mapping of scalar fields into their strings, noting a
// wrong shape in *shape and unknown keys in *unknown (with their lines).
func decodeFields(n *yaml.Node, want string, fields map[string]*string, shape *string, unknown *[]string) {
	if n.Kind != yaml.MappingNode {
		*shape = fmt.Sprintf("want a mapping %s (line %d)", want, n.Line)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if dst, ok := fields[k.Value]; ok {
			*dst = scalar(k.Value, v, shape)
		} else {
			*unknown = append(*unknown, fmt.Sprintf("%s (line %d)", k.Value, k.Line))
		}
	}
}

// scalar returns a scalar node's text, or records a shape problem.
func scalar(key string, n *yaml.Node, shape *string) string {
	if n.Kind != yaml.ScalarNode {
		if *shape == "" {
			*shape = fmt.Sprintf("%s: want a single value, got a list or mapping (line %d)", key, n.Line)
		}
		return ""
	}
	return n.Value
}

// MarshalYAML writes the {value, source} mapping back.
func (q Quantity) MarshalYAML() (any, error) {
	return struct {
		Value  string `yaml:"value"`
		Source string `yaml:"source"`
	}{q.Value, q.Source}, nil
}

// MarshalYAML writes the {read, bandwidth, source} mapping back.
func (c CurveSample) MarshalYAML() (any, error) {
	return struct {
		Read      string `yaml:"read"`
		Lanes     string `yaml:"lanes,omitempty"`
		Bandwidth string `yaml:"bandwidth"`
		Source    string `yaml:"source"`
	}{c.Read, c.Lanes, c.Bandwidth, c.Source}, nil
}

// ParseProfile decodes a profile from YAML and validates it. filename names
// the data in error messages; when the YAML has no name, the file's base name
// without extension is used. Unknown keys are errors. The error, if any, lists
// every problem found, one per line, each as "file: field.path: reason".
func ParseProfile(data []byte, filename string) (*Profile, error) {
	p, err := decodeProfile(data, filename)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// MaxProfileBytes bounds a profile file (an embedded one is a few KiB).
const MaxProfileBytes = 1 << 20

// ParseProfileFile reads and parses the profile at path (see ParseProfile).
func ParseProfileFile(path string) (*Profile, error) {
	data, err := textin.ReadFile(path, "device profile", MaxProfileBytes, nil)
	if err != nil {
		return nil, fmt.Errorf("device profile: %w", err)
	}
	p, err := ParseProfile(data, path)
	if err != nil {
		return nil, err
	}
	return p, checkBuiltinName(p, path)
}

// ErrBuiltinName is a profile file named as a built-in profile whose
// device differs from the built-in's: results would show the built-in's
// name beside other numbers.
var ErrBuiltinName = errors.New("has a built-in profile's name")

// checkBuiltinName refuses a profile that takes a built-in profile's name
// (stated, or its file's base name) but not its device. An unedited copy of
// a built-in is the built-in and is accepted.
func checkBuiltinName(p *Profile, path string) error {
	if !slices.Contains(ProfileNames(), p.Name) {
		return nil
	}
	b, err := LoadProfile(p.Name)
	if err != nil {
		return err
	}
	mine, err1 := p.Device()
	theirs, err2 := b.Device()
	if err1 == nil && err2 == nil && reflect.DeepEqual(mine, theirs) {
		return nil
	}
	return fmt.Errorf("%s: profile %q %w but other values: give it a name of its own (name: my-%s)", path, p.Name, ErrBuiltinName, p.Name)
}

// decodeProfile decodes without validating. Only YAML syntax errors fail
// here; everything else (a non-mapping document, unknown or duplicate keys,
// merge keys, a second document) is left for Validate.
func decodeProfile(data []byte, filename string) (*Profile, error) {
	p := &Profile{file: filename, raw: bytes.Clone(data)}
	doc, refused, err := yamlin.Parse(data, "profile file")
	switch {
	case err != nil:
		// "yaml: line 3: did not find ..." becomes "file:3: did not find ...".
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		var line int
		if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
			_, rest, _ := strings.Cut(msg, ": ")
			return nil, fmt.Errorf("%s:%d: %s", filename, line, rest)
		}
		return nil, fmt.Errorf("%s: %s", filename, msg)
	case doc == nil:
		p.problems = append(p.problems, "empty profile")
	default:
		for _, r := range refused {
			p.problems = append(p.problems, r.String())
		}
		p.problems = append(p.problems, decodeNode(data, doc, p)...)
	}
	if p.Name == "" {
		base := filepath.Base(filename)
		p.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return p, nil
}

// decodeNode decodes the document into p and returns the problems found, in
// line order: unknown keys (unknownKeys) and values of the wrong shape.
func decodeNode(data []byte, doc *yaml.Node, p *Profile) []string {
	root := doc.Content[0]
	paths := linePaths(root)
	found := unknownKeys(data, root)
	var te *yaml.TypeError
	if err := doc.Decode(p); errors.As(err, &te) {
		for _, e := range te.Errors {
			found = append(found, typeErrorText(e, paths))
		}
	} else if err != nil {
		found = append(found, lineProblem{text: err.Error()})
	}
	slices.SortStableFunc(found, func(a, b lineProblem) int { return a.line - b.line })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.text
	}
	return out
}

// lineProblem is a decode-time problem and its line (0 when unknown).
type lineProblem struct {
	line int
	text string
}

// unknownKeys reports each key that Profile has no yaml field for, as
// "path.key: unknown field (line N)": yaml.v3's Decoder with KnownFields
// finds them in data (the sections; Quantity and CurveSample report their
// own), root gives each key's dotted path.
//
// NB: KnownFields exists only on a Decoder of bytes, not on Node.Decode,
// which decodes the document with yamlin's refused keys removed; so the
// bytes are decoded a second time, into a scratch Profile, for this alone.
// A mapping with a duplicate key is skipped by that decode (yaml.v3 fails
// the mapping); yamlin reports the duplicate.
func unknownKeys(data []byte, root *yaml.Node) []lineProblem {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var te *yaml.TypeError
	if !errors.As(dec.Decode(new(Profile)), &te) {
		return nil
	}
	type at struct {
		line int
		key  string
	}
	keys := map[at]string{} // key and its line → its dotted path
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				keys[at{k.Line, k.Value}] = prefix + k.Value
				walk(n.Content[i+1], prefix+k.Value+".")
			}
		case yaml.SequenceNode:
			for i, v := range n.Content {
				walk(v, fmt.Sprintf("%s[%d].", strings.TrimSuffix(prefix, "."), i))
			}
		}
	}
	walk(root, "")
	var out []lineProblem
	for _, e := range te.Errors {
		var line int
		var key string
		if n, _ := fmt.Sscanf(e, "line %d: field %s not found in type", &line, &key); n == 2 {
			out = append(out, lineProblem{line, fmt.Sprintf("%s: unknown field (line %d)", keys[at{line, key}], line)})
		}
	}
	return out
}

// typeErrorText rewrites one yaml.v3 type error with the field path: "line
// 9: cannot unmarshal !!map into []devices.CurveSample" becomes
// "flash.aggregate: want a list, got a mapping (line 9)". paths maps a
// value's line to its field path. Other errors are kept as they are.
func typeErrorText(e string, paths map[int]string) lineProblem {
	var line int
	_, rest, _ := strings.Cut(e, ": ")
	if n, _ := fmt.Sscanf(e, "line %d:", &line); n != 1 || !strings.HasPrefix(rest, "cannot unmarshal ") {
		return lineProblem{line, e}
	}
	// "cannot unmarshal !!tag [`value`] into TYPE"
	tag, typ, _ := strings.Cut(strings.TrimPrefix(rest, "cannot unmarshal "), " into ")
	want := "a mapping"
	if strings.HasPrefix(typ, "[]") {
		want = "a list"
	}
	got := map[string]string{"!!map": "a mapping", "!!seq": "a list"}[strings.Fields(tag + " x")[0]]
	if got == "" {
		got = "a scalar"
	}
	path := paths[line]
	if path == "" {
		path = "(document)"
	}
	return lineProblem{line, fmt.Sprintf("%s: want %s, got %s (line %d)", path, want, got, line)}
}

// linePaths maps the line of each mapping value under root to its dotted
// field path; the outermost path wins when several start on one line.
func linePaths(root *yaml.Node) map[int]string {
	paths := map[int]string{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				path := prefix + n.Content[i].Value
				v := n.Content[i+1]
				if _, seen := paths[v.Line]; !seen {
					paths[v.Line] = path
				}
				walk(v, path+".")
			}
		case yaml.SequenceNode:
			base := strings.TrimSuffix(prefix, ".")
			for i, v := range n.Content {
				path := fmt.Sprintf("%s[%d]", base, i)
				if _, seen := paths[v.Line]; !seen {
					paths[v.Line] = path
				}
				walk(v, path+".")
			}
		}
	}
	walk(root, "")
	return paths
}

// File is the file name the profile was read from ("" for a built profile).
func (p *Profile) File() string { return p.file }

// YAML returns the profile's YAML: the bytes it was read from, comments
// included, or a fresh encoding when the profile was not read from YAML.
func (p *Profile) YAML() ([]byte, error) {
	if p.raw != nil {
		return bytes.Clone(p.raw), nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
