package experiment

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
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
// memory.
func writeLongTrace(b *testing.B, tokens int) string {
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
	path := filepath.Join(b.TempDir(), "long.parquet")
	w, err := traces.Create(path, meta)
	if err != nil {
		b.Fatal(err)
	}
	for src.Next() {
		if err := w.Write(src.Step()); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
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

// BenchmarkLongTrace loads and simulates a long trace of the 40-layer,
// 256-expert, top-8 shape under lru (read without lookahead) and les (read
// with it, candidate-indexed): load-s is the read, ns/op one simulation,
// heap-MiB the live heap after loading, est-MiB EstimateMemory, peak-RSS-MiB
// VmHWM over load and run (reset before each policy), B/token the file size.
func BenchmarkLongTrace(b *testing.B) {
	tokens := longTokens()
	path := writeLongTrace(b, tokens)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, pol := range []string{"lru", "les"} {
		b.Run(pol, func(b *testing.B) {
			debug.FreeOSMemory()
			resetHWM()
			s, err := FromOptions(map[string]string{"trace": path, "policy": pol, "cache": "3GiB"})
			if err != nil {
				b.Fatal(err)
			}
			in := &Inputs{MaxMemory: -1}
			start := time.Now()
			p, err := in.Resolve(s)
			if err != nil {
				b.Fatal(err)
			}
			load := time.Since(start)
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			est := EstimateMemory(p.Meta, int64(len(p.Steps)), traceColumns(&p.Spec), pol, estimateCands(&p.Spec, p.Model.TopK))
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
