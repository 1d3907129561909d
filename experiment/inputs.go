package experiment

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/traces"
)

// LoadedTrace is a trace in memory: its metadata, every step (policies such as
// oracle read the future) and, for a file, the SHA-256 of its bytes.
type LoadedTrace struct {
	Meta   traces.Meta
	Steps  []traces.Step
	SHA256 string // hex; "" for generated traces
}

// Inputs loads what specs refer to and keeps it, so that many runs (a sweep)
// share one copy of each trace: a file is read with the columns a run needs
// (again only when a later run needs columns the loaded copy lacks: lookahead
// for les after runs without it), a synthetic trace or a stated predictor's
// scores are generated once, and each candidate index
// (traces.IndexLookahead) is built once. Before a trace is loaded or
// generated, the run's memory is estimated and checked (MaxMemory). Steps
// handed out are shared and must not be modified. Inputs is safe for
// concurrent use; the zero value reads files with ReadTraceFileColumns and
// devices with LoadDevice.
type Inputs struct {
	// ReadTrace reads a trace file with every column; nil means reading it
	// with ReadTraceFileColumns and only the columns the run needs.
	ReadTrace func(path string) (*LoadedTrace, error)
	// LoadDevice resolves an embedded profile name or a profile file; nil
	// means LoadDevice.
	LoadDevice func(name, file string) (*devices.Device, error)
	// MaxMemory is the most bytes a run's trace and policy state may take
	// (EstimateMemory, checked before a trace is loaded or generated): 0
	// means the memory available now (MemAvailable in /proc/meminfo; no
	// limit where it cannot be read), a negative value no limit.
	MaxMemory int64
	// StreamAbove is the most bytes a trace file's steps may take in memory
	// (traces.MemoryBytes for the run's columns) before its runs stream it
	// instead (sim.RunSource: one pass in memory, the file read again by
	// each run) rather than load it once and share it: 0 means
	// DefaultStreamAbove, a negative value streams every trace. A stated
	// predictor and a custom ReadTrace always load. A synthetic trace streams
	// (generated again by each run) when its steps with every column, as the
	// generator makes them, would take more than StreamAbove.
	StreamAbove int64
	// FirstPass, when set, is told how far the first pass over a streamed
	// trace has got (steps read of total): the pass that finds the future of
	// oracle, belady and pinned-hot, the draft statistics of speculative
	// decoding, or what a file's footer does not say.
	// It runs inside Resolve, on the caller's goroutine.
	FirstPass func(done, total int64)

	mu      sync.Mutex
	entries map[string]*entry
	checked map[any]error // CheckInputs' answers by device, model or trace file
}

// entry is one trace as loaded or generated, with its candidate indexes,
// or a trace file to stream (stream set; tr.Steps nil).
type entry struct {
	key     string
	tr      *LoadedTrace
	indexed map[indexKey][]traces.Step
	stream  *streamTrace
	// futures are the loaded steps' Futures by (layers, experts), shared by
	// every run of oracle, belady and pinned-hot (with oracle's next-use index).
	futures map[[2]int]*policies.Future
}

// indexKey is one traces.IndexLookahead configuration.
type indexKey struct {
	n        int
	withSums bool
}

// ReadTraceFile reads a Parquet trace fully and digests its bytes.
func ReadTraceFile(path string) (*LoadedTrace, error) {
	return ReadTraceFileColumns(path, traces.Columns{})
}

// ReadTraceFileColumns reads a Parquet trace's steps with only the vectors
// cols keeps (Meta still describes the whole file) and digests its bytes.
func ReadTraceFileColumns(path string, cols traces.Columns) (*LoadedTrace, error) {
	sum, err := traces.FileSHA256(path)
	if err != nil {
		return nil, err
	}
	r, err := traces.OpenColumns(path, cols)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	steps, err := traces.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return &LoadedTrace{Meta: r.Meta(), Steps: steps, SHA256: sum}, nil
}

// LoadDevice resolves a profile file (when file is set) or an embedded
// profile name into a device.
func LoadDevice(name, file string) (*devices.Device, error) {
	var p *devices.Profile
	var err error
	if file != "" {
		p, err = devices.ParseProfileFile(file)
	} else {
		p, err = devices.LoadProfile(name)
	}
	if err != nil {
		return nil, err
	}
	return p.Device()
}

func (in *Inputs) device(d Device) (*devices.Device, error) {
	if in.LoadDevice != nil {
		return in.LoadDevice(d.Name, d.File)
	}
	return LoadDevice(d.Name, d.File)
}

// get returns the entry called key, making it with make on first use.
// NB: the lock is held while loading, so concurrent runs wait for one load
// instead of loading the same trace twice.
func (in *Inputs) get(key string, make func() (*LoadedTrace, error)) (*entry, error) {
	return in.getEntry(key, func() (*entry, error) {
		tr, err := make()
		if err != nil {
			return nil, err
		}
		return &entry{tr: tr}, nil
	})
}

// getEntry is get for an entry made whole by make.
func (in *Inputs) getEntry(key string, make func() (*entry, error)) (*entry, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if e, ok := in.entries[key]; ok {
		return e, nil
	}
	e, err := make()
	if err != nil {
		return nil, err
	}
	if in.entries == nil {
		in.entries = map[string]*entry{}
	}
	e.key, e.indexed = key, map[indexKey][]traces.Step{}
	in.entries[key] = e
	return e, nil
}

// file is the trace at path with at least the columns cols keeps: a copy
// already loaded with more columns serves it.
// check runs before a load (not for a trace already in memory).
func (in *Inputs) file(path string, cols traces.Columns, check func(traces.Columns) error) (*entry, error) {
	if in.ReadTrace != nil {
		return in.get("file\x00"+path, func() (*LoadedTrace, error) {
			if err := check(traces.Columns{}); err != nil {
				return nil, err
			}
			return in.ReadTrace(path)
		})
	}
	in.mu.Lock()
	for _, c := range supersets(cols) {
		if e, ok := in.entries[fileKey(path, c)]; ok {
			in.mu.Unlock()
			return e, nil
		}
	}
	in.mu.Unlock()
	return in.get(fileKey(path, cols), func() (*LoadedTrace, error) {
		if err := check(cols); err != nil {
			return nil, err
		}
		return ReadTraceFileColumns(path, cols)
	})
}

// fileKey names the trace at path read with cols.
func fileKey(path string, cols traces.Columns) string {
	if cols == (traces.Columns{}) {
		return "file\x00" + path
	}
	return fmt.Sprintf("file\x00%s\x00%+v", path, cols)
}

// supersets are the projections that keep every column cols keeps, cols
// first.
func supersets(cols traces.Columns) []traces.Columns {
	out := []traces.Columns{cols}
	for i := range 8 {
		c := traces.Columns{NoLogits: i&1 != 0, NoRouterInputs: i&2 != 0, NoLookahead: i&4 != 0}
		if c != cols && (!c.NoLogits || cols.NoLogits) && (!c.NoRouterInputs || cols.NoRouterInputs) && (!c.NoLookahead || cols.NoLookahead) {
			out = append(out, c)
		}
	}
	return out
}

// synthetic is the synthetic trace of m with y; check runs before it is
// generated (not for a trace already in memory).
func (in *Inputs) synthetic(m *devices.ModelSpec, y Synthetic, check func() error) (*entry, error) {
	key, _ := json.Marshal(y)
	return in.get("synth\x00"+m.Name+"\x00"+m.Variant+"\x00"+string(key), func() (*LoadedTrace, error) {
		if err := check(); err != nil {
			return nil, err
		}
		meta, steps, err := traces.Synth(m, y.Options())
		if err != nil {
			return nil, err
		}
		return &LoadedTrace{Meta: meta, Steps: steps}, nil
	})
}

// synthStreamed is the synthetic trace of m with y to stream: generated
// again for each pass over it, never held.
func (in *Inputs) synthStreamed(m *devices.ModelSpec, y Synthetic) (*entry, error) {
	key, _ := json.Marshal(y)
	return in.getEntry("synthstream\x00"+m.Name+"\x00"+m.Variant+"\x00"+string(key), func() (*entry, error) {
		o := y.Options()
		meta, _, err := traces.SynthSource(m, o) // NB: validates o
		if err != nil {
			return nil, err
		}
		st := &streamTrace{synth: &synthStream{model: m, opt: o}, steps: synthSteps(y), sum: synthSummary(o)}
		return &entry{tr: &LoadedTrace{Meta: meta}, stream: st}, nil
	})
}

// Options are the trace generator's options for y.
func (y Synthetic) Options() traces.SynthOptions {
	o := traces.DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.Sequences = y.Tokens, y.PromptTokens, y.Sequences
	o.Skew, o.Reuse, o.LookaheadRecall = y.Skew, y.Reuse, y.LookaheadRecall
	o.LookaheadDepth, o.DepthPenalty, o.Seed = y.LookaheadDepth, y.DepthPenalty, y.Seed
	return o
}

// synthSteps is the number of steps of the synthetic trace y.
func synthSteps(y Synthetic) int64 {
	return int64(max(y.Sequences, 1)) * int64(y.PromptTokens+y.Tokens)
}

// predicted is base with lookahead scores from the stated predictor p.
// check runs before the scores are generated (not for ones already in memory).
func (in *Inputs) predicted(b *entry, p Predictor, check func() error) (*entry, error) {
	key, _ := json.Marshal(p)
	base := b.tr
	return in.get("predict\x00"+b.key+"\x00"+string(key), func() (*LoadedTrace, error) {
		if err := check(); err != nil {
			return nil, err
		}
		o := traces.DefaultPredictOptions()
		o.Recall, o.FalsePositives, o.DepthPenalty, o.Depth, o.Seed = p.Recall, p.FalsePositives, p.DepthPenalty, p.Depth, p.Seed
		meta, steps, err := traces.PredictLookahead(base.Meta, base.Steps, o)
		if err != nil {
			return nil, err
		}
		return &LoadedTrace{Meta: meta, Steps: steps, SHA256: base.SHA256}, nil
	})
}

// index returns e's steps with a candidate index of n per lookahead vector.
// The first index is built in place; another configuration indexes a copy
// of the steps' layers (the vectors themselves stay shared).
func (in *Inputs) index(e *entry, n int, withSums bool) []traces.Step {
	in.mu.Lock()
	defer in.mu.Unlock()
	k := indexKey{n, withSums}
	if s, ok := e.indexed[k]; ok {
		return s
	}
	steps := e.tr.Steps
	if e.tr.Meta.LookaheadTop > 0 {
		return steps // compact lookahead: the file holds the index
	}
	if len(e.indexed) > 0 {
		steps = copyLayers(steps)
	}
	traces.IndexLookahead(steps, n, withSums)
	e.indexed[k] = steps
	return steps
}

// future returns the Future of e's loaded steps for model m, built once.
func (in *Inputs) future(e *entry, m *devices.ModelSpec) (*policies.Future, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	k := [2]int{len(m.Layers), m.Experts}
	if f, ok := e.futures[k]; ok {
		return f, nil
	}
	f, err := policies.FutureOf(m, e.tr.Steps)
	if err != nil {
		return nil, err
	}
	if e.futures == nil {
		e.futures = map[[2]int]*policies.Future{}
	}
	e.futures[k] = f
	return f, nil
}

// copyLayers copies steps and their LayerStep values (not the slices they hold).
func copyLayers(steps []traces.Step) []traces.Step {
	n := 0
	for i := range steps {
		n += len(steps[i].Layers)
	}
	out := make([]traces.Step, len(steps))
	layers := make([]traces.LayerStep, 0, n)
	for i, st := range steps {
		out[i] = st
		from := len(layers)
		layers = append(layers, st.Layers...)
		out[i].Layers = layers[from:len(layers):len(layers)]
	}
	return out
}
