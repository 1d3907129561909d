package sim_test

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

var (
	rewrite = flag.Bool("rewrite", false, "rewrite testdata/fingerprint.txt from the current results")
	dump    = flag.String("dump", "", "also write every run's name and Result JSON, a line each, to this file (to compare two versions' results field by field)")
)

// dumped collects the -dump lines.
var dumped strings.Builder

// TestResultFingerprint pins every field of the Result of a grid of runs
// (devices, one with thermal derating and one on the detailed gguf-mmap
// fault path × every policy × both layouts × two
// caches × rank order and cached-first, and speculative decoding at one of them; with
// prefill, on a short two-sequence trace with depth-2 lookahead) by a hash of
// its JSON. It is what keeps a speed-up honest: a change meant to give
// identical results must leave testdata/fingerprint.txt as it is (the lines
// that differ name the runs). A change that is meant to alter results
// rewrites it with go test ./sim -run Fingerprint -rewrite, and says why.
func TestResultFingerprint(t *testing.T) {
	if raceEnabled {
		t.Skip("single-threaded and deterministic: the plain run checks it (too slow under -race)")
	}
	dumped.Reset() // NB: -count=N runs the test N times
	got := fingerprint(t) + referenceFingerprint(t)
	if *dump != "" {
		if err := os.WriteFile(*dump, []byte(dumped.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join("testdata", "fingerprint.txt")
	if *rewrite {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./sim -run Fingerprint -rewrite creates it)", err)
	}
	want := strings.Split(strings.TrimSpace(string(b)), "\n")
	have := strings.Split(strings.TrimSpace(got), "\n")
	if len(want) != len(have) {
		t.Fatalf("%d runs, %s has %d", len(have), path, len(want))
	}
	bad := 0
	for i := range want {
		if want[i] != have[i] {
			bad++
			if bad <= 10 {
				t.Errorf("result changed:\n got %s\nwant %s", have[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d runs changed (rewrite with -rewrite only for a change meant to alter results)", bad, len(want))
	}
}

// fingerprint runs the grid and returns a line per run: its settings and the
// first 16 bytes of the SHA-256 of its Result's JSON (or of its error).
func fingerprint(t *testing.T) string {
	t.Helper()
	o := traces.DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.Sequences, o.LookaheadDepth = 40, 12, 2, 2
	m, steps, fut := fingerprintTrace(t, o)
	var out strings.Builder
	for _, dev := range []string{"iphone-17-pro-max", "ufs4-phone-12gb", "thermal", "mmap-detailed"} {
		d := fingerprintDevice(t, dev)
		for _, pol := range policies.Names() {
			for _, layout := range []sim.Layout{sim.LayoutPerExpert, sim.LayoutGGUFMmap} {
				for _, cache := range []int64{600 << 20, 3 << 30} {
					for _, cf := range []bool{false, true} {
						for _, spec := range fingerprintSpecs(cache, cf) {
							cfg := sim.Config{Model: m, Device: d, CacheBytes: cache, Layout: layout, CachedFirst: cf,
								SpecBlock: spec, SpecAccept: 0.6, Prefill: true, Seed: 7, MmapNeighbours: dev == "mmap-detailed"}
							p := policies.DefaultParams(m)
							p.Trace, p.Future = steps, fut
							if cf {
								p.Depth = 2
							}
							pl, err := policies.New(pol, p)
							if err != nil {
								t.Fatal(err)
							}
							var b []byte
							if r, err := sim.Run(cfg, steps, pl); err != nil {
								b = []byte(err.Error())
							} else if b, err = json.Marshal(r); err != nil {
								t.Fatal(err)
							}
							name := fmt.Sprintf("%s %s %s %dMiB cached-first=%v spec=%d", dev, pol, layout, cache>>20, cf, spec)
							fmt.Fprintf(&out, "%s %s\n", name, digest(name, b))
						}
					}
				}
			}
		}
	}
	return out.String()
}

// referenceFingerprint adds the runs make bench times: every policy on the
// reference shape's embedded default trace (2,000 tokens, lookahead indexed)
// on the iPhone 17 Pro Max with a 3 GiB cache, per-expert, cached-first: long
// enough for the flash queues, the stamps and the policies' books to reach
// their steady state, which the short grid above never does.
func referenceFingerprint(t *testing.T) string {
	t.Helper()
	m, steps, fut := fingerprintTrace(t, traces.DefaultSynthOptions())
	d := fingerprintDevice(t, "iphone-17-pro-max")
	var out strings.Builder
	for _, pol := range policies.Names() {
		cfg := sim.Config{Model: m, Device: d, CacheBytes: 3 << 30, Layout: sim.LayoutPerExpert, CachedFirst: true, SpecBlock: 1}
		p := policies.DefaultParams(m)
		p.Trace, p.Future = steps, fut
		pl, err := policies.New(pol, p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sim.Run(cfg, steps, pl)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("reference %s per-expert 3072MiB cached-first=true spec=1", pol)
		fmt.Fprintf(&out, "%s %s\n", name, digest(name, b))
	}
	return out.String()
}

// digest is the first 16 bytes of the SHA-256 of a run's Result JSON (or
// error), in hex; with -dump it also keeps the JSON.
func digest(name string, b []byte) string {
	if *dump != "" {
		fmt.Fprintf(&dumped, "%s\t%s\n", name, b)
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:16])
}

// fingerprintTrace is the reference model's synthetic trace for o, its
// lookahead indexed as simulate does, and its Future.
func fingerprintTrace(t *testing.T, o traces.SynthOptions) (*devices.ModelSpec, []traces.Step, *policies.Future) {
	t.Helper()
	m, err := devices.LookupModel("minicpm-v-4.7-35b-a3b", "")
	if err != nil {
		t.Fatal(err)
	}
	_, steps, err := traces.Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	traces.IndexLookahead(steps, m.TopK, false)
	fut, err := policies.FutureOf(m, steps)
	if err != nil {
		t.Fatal(err)
	}
	return m, steps, fut
}

// fingerprintSpecs are the speculative blocks run: speculative decoding
// (whose draft router is costly to build) at one cache and order only.
func fingerprintSpecs(cache int64, cachedFirst bool) []int {
	if cache == 3<<30 && cachedFirst {
		return []int{1, 3}
	}
	return []int{1}
}

// fingerprintDevice loads a shipped profile; "thermal" is the iPhone 17 Pro
// Max with thermal derating (no shipped profile states it), "mmap-detailed"
// the same phone with 4 compute threads and a 256 KiB asynchronous
// read-ahead, which (with neighbours, set by the grid) drive gguf-mmap's
// detailed fault path.
func fingerprintDevice(t *testing.T, name string) *devices.Device {
	t.Helper()
	base := name
	if name == "thermal" || name == "mmap-detailed" {
		base = "iphone-17-pro-max"
	}
	d, err := devices.LoadDevice(base)
	if err != nil {
		t.Fatal(err)
	}
	switch name {
	case "thermal":
		d.Flash.ThermalFloor, d.Flash.ThermalBytes = 0.6, 2<<30
	case "mmap-detailed":
		d.ComputeThreads, d.Flash.ReadAheadAsyncBytes = 4, 256<<10
	}
	return d
}
