package experiment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// longTokens is the long trace's decode tokens: LESSIM_LONG_TOKENS, default
// 20,000 (its file takes about a minute to write here).
func longTokens() int {
	if n, err := strconv.Atoi(os.Getenv("LESSIM_LONG_TOKENS")); err == nil && n > 0 {
		return n
	}
	return 20000
}

// writeLongTrace streams a synthetic trace of the default model (40 layers,
// 256 experts, top-8) with depth-1 lookahead to a file, never holding it in
// memory; top > 0 stores the lookahead compactly (Meta.LookaheadTop).
func writeLongTrace(b *testing.B, dir string, tokens, top int) string {
	b.Helper()
	m, err := devices.LookupModel(DefaultModel, "")
	if err != nil {
		b.Fatal(err)
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.LookaheadDepth, o.Seed = tokens, 0, 1, 11
	meta, src, err := traces.SynthSource(m, o)
	if err != nil {
		b.Fatal(err)
	}
	meta.LookaheadTop = top
	path := filepath.Join(dir, fmt.Sprintf("long-top%d.parquet", top))
	if err := traces.WriteFile(path, meta, src); err != nil {
		b.Fatal(err)
	}
	return path
}

// vmHWM returns the process's peak resident memory (VmHWM) in bytes and
// resets it (writing 5 to /proc/self/clear_refs); 0 where unavailable.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) >= 2 && string(f[0]) == "VmHWM:" {
			n, _ = strconv.ParseInt(string(f[1]), 10, 64)
			n *= 1024
		}
	}
	return n
}

func resetHWM() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// longVariants are BenchmarkLongTrace's runs: a policy on the trace file with
// full lookahead vectors or on the one storing its top-8 candidates, loaded
// or streamed.
var longVariants = []struct {
	name, policy string
	top          int
	stream       bool
}{
	{"lru", "lru", 0, false},
	{"les", "les", 0, false},
	{"lru-compact", "lru", 8, false},
	{"les-compact", "les", 8, false},
	{"lru-compact-stream", "lru", 8, true},
	{"les-compact-stream", "les", 8, true},
}

// BenchmarkLongTrace loads and simulates a long trace of the 40-layer,
// 256-expert, top-8 shape with depth-1 lookahead under lru (read without
// lookahead) and les (read with it, candidate-indexed), from a file with full
// lookahead vectors and from one with its top-8 candidates (compact), the
// compact one also streamed (each run reads the file; nothing is loaded):
// load-s is the read (the digest only when streamed), ns/op one simulation, heap-MiB the live heap after
// loading, est-MiB EstimateMemory, peak-RSS-MiB VmHWM over load and run
// (reset before each variant), file-B/token the file size.
// LESSIM_LONG_TOKENS sets the length; LESSIM_LONG_VARIANTS (comma-separated
// names) picks variants.
func BenchmarkLongTrace(b *testing.B) {
	tokens := longTokens()
	files, dir := map[int]string{}, b.TempDir()
	for _, v := range longVariants {
		if w := os.Getenv("LESSIM_LONG_VARIANTS"); w != "" && !slices.Contains(strings.Split(w, ","), v.name) {
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			path, ok := files[v.top]
			if !ok {
				path = writeLongTrace(b, dir, tokens, v.top)
				files[v.top] = path
			}
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			pol := v.policy
			debug.FreeOSMemory()
			resetHWM()
			s, err := FromOptions(map[string]string{"trace": path, "policy": pol, "cache": "3GiB"})
			if err != nil {
				b.Fatal(err)
			}
			in := &Inputs{MaxMemory: -1, StreamAbove: 1 << 62}
			if v.stream {
				in.StreamAbove = -1
			}
			start := time.Now()
			p, err := in.Resolve(s)
			if err != nil {
				b.Fatal(err)
			}
			load := time.Since(start)
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			est := EstimateMemory(p.Meta, int64(len(p.Steps)), traceColumns(&p.Spec), pol, estimateCands(&p.Spec, p.Model))
			if v.stream {
				est = EstimateStreamMemory(p.Meta, int64(tokens), traceColumns(&p.Spec), pol, estimateCands(&p.Spec, p.Model), 1)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tokens), "tokens")
			b.ReportMetric(load.Seconds(), "load-s")
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(est.Total())/(1<<20), "est-MiB")
			b.ReportMetric(float64(vmHWM())/(1<<20), "peak-RSS-MiB")
			b.ReportMetric(float64(st.Size())/float64(tokens), "file-B/token")
			runtime.KeepAlive(p)
		})
	}
}
