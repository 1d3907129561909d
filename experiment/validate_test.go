package experiment

import (
	"math"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
)

// TestValidateSpecFiles: a spec file is held to the same rules as flags, and
// every problem is listed at once.
func TestValidateSpecFiles(t *testing.T) {
	for _, tc := range []struct {
		json string
		want []string
	}{
		{`{"version":2}`, []string{"version: this lessim reads spec version 1 (got 2)"}},
		{`{"trace":{"path":"t.parquet"},"model":{"name":"x"}}`, []string{"model: does not apply with a trace file"}},
		{`{"trace":{"path":"t.parquet","synthetic":{}}}`, []string{"trace: a file (path) and synthetic settings exclude each other"}},
		{`{"trace":{"sha256":"abc"}}`, []string{"trace.sha256: applies only to a trace file"}},
		{`{"trace":{"path":"t","sha256":"ABC"}}`, []string{"trace.sha256: must be 64 lowercase hex digits"}},
		{`{"predictor":{"recall":0.8}}`, []string{"predictor: does not apply: the synthetic trace carries its own lookahead scores"}},
		{`{"trace":{"path":"t.parquet"},"predictor":{"recall":0.8},"policy":{"name":"lru"}}`, []string{"predictor: does not apply: policy lru reads no lookahead scores"}},
		{`{"trace":{"path":"t.parquet"},"predictor":{"recall":0.8},"policy":{"name":"les","les":{"no_prefetch":true}}}`, []string{"predictor: does not apply: les with no_prefetch reads no lookahead scores"}},
		{`{"trace":{"synthetic":{"lookahead_depth":0}},"predictor":{"recall":0}}`, []string{"predictor.recall: must be a finite number in (0, 1]"}},
		{`{"policy":{"name":"lru","les":{"top_n":4}}}`, []string{"policy.les: applies only to policy les (policy is lru)"}},
		{`{"policy":{"name":"les","pinned_hot":{}}}`, []string{"policy.pinned_hot: applies only to policy pinned-hot"}},
		{`{"policy":{"name":"les","les":{"no_prefetch":true,"depth":2}}}`, []string{"with no_prefetch, top_n, threshold"}},
		{`{"policy":{"name":"les","les":{"top_n":4,"threshold":0.5}}}`, []string{"policy.les.top_n: does not apply with threshold"}},
		{`{"policy":{"name":"les","les":{"max_candidates":4}}}`, []string{"policy.les.max_candidates: applies only with threshold"}},
		{`{"policy":{"name":"les","les":{"threshold":1.5}}}`, []string{"policy.les.threshold: must be a finite number in [0, 1]"}},
		{`{"policy":{"name":"pinned-hot","pinned_hot":{"pin_fraction":-0.1}}}`, []string{"pin_fraction: must be a finite number in (0, 1]"}},
		{`{"policy":{"name":"fifo"}}`, []string{`unknown policy "fifo"`}},
		{`{"trace":{"synthetic":{"lookahead_depth":0}}}`, []string{"policy.les.depth: 1: the synthetic trace carries lookahead scores to depth 0 only"}},
		{`{"trace":{"synthetic":{"lookahead_depth":1}},"policy":{"name":"les","les":{"depth":3}}}`, []string{"policy.les.depth: 3: the synthetic trace carries lookahead scores to depth 1 only"}},
		{`{"speculative":{"block":1}}`, []string{"speculative.block: must be >= 2"}},
		{`{"speculative":{"block":65,"drafter":{"kind":"mtp"}}}`, []string{"speculative.block: must be at most 64 tokens per verify pass (got 65)"}},
		{`{"speculative":{"drafter":{"kind":"explicit","bytes":9223372036854775807,"flops":1000000000000001}}}`,
			[]string{"speculative.drafter.bytes: must be in [0, 17592186044416]", "speculative.drafter.flops: must be in [0, 1e+15] per draft token (got 1000000000000001)"}},
		{`{"mmap_neighbours":true,"page_cache":"free-ram"}`, []string{"mmap_neighbours: applies only to the gguf-mmap layout", "page_cache: applies only to the gguf-mmap layout",
			"page_cache: with free-ram the kernel evicts, in an order lessim approximates by LRU: the policy must be lru or ondemand (got les)"}},
		{`{"layout":"gguf-mmap","policy":{"name":"lru"},"cache":{"size":"3GiB"},"page_cache":"free-ram"}`, []string{`page_cache: free-ram sizes the cache from the device's free RAM: cache.size must be auto (got "3GiB")`}},
		{`{"layout":"gguf-mmap","page_cache":"kernel"}`, []string{`page_cache: "kernel" is not a page cache`}},
		{`{"speculative":{"accept":2}}`, []string{"speculative.accept: must be a finite number in [0, 1]"}},
		{`{"trace":{"path":"t"},"speculative":{},"spec_from_trace":true}`, []string{"speculative: does not apply with spec_from_trace"}},
		{`{"spec_from_trace":true}`, []string{"spec_from_trace: needs a trace file"}},
		{`{"prefill":true}`, []string{"prefill: the synthetic trace has no prefill"}},
		{`{"device":{"name":"a","file":"b"}}`, []string{"device: an embedded name (a) and a file (b) exclude each other"}},
		{`{"device":{"profile":{"name":"x"}}}`, []string{"device.profile.ram_bytes: 0 B is outside", "device.profile.mem_bandwidth: 0 B/s is outside", "device.profile.flash.lanes: 0 is outside", "device.profile.flash.single_lane: empty"}},
		{`{"cache":{"bytes":-1}}`, []string{"cache.bytes: must be >= 0"}},
		{`{"cache":{"size":"-2GiB"}}`, []string{`cache "-2GiB": must be positive`}},
		{`{"cache":{"size":"NaN%"}}`, []string{`cache "NaN%": a percentage must be in (0, 100]`}},
		{`{"cache":{"size":"lots"}}`, []string{`cache "lots": "lots" is not a size`}},
		{`{"layout":"zip"}`, []string{`unknown layout "zip"`}},
		{`{"expert_quant":"Q9_K"}`, []string{`expert_quant: unknown quant type "Q9_K" (valid: BF16, F16, F32, Q2_K, Q3_K, Q4_0, Q4_1, Q4_K, Q5_0, Q5_1, Q5_K, Q6_K, Q8_0, Q8_K)`}},
		{`{"expert_quant":"q3_k"}`, []string{`expert_quant: write "q3_k" as GGUF files spell it: "Q3_K"`}},
		{`{"context_tokens":-1}`, []string{"context_tokens: must be in [0, 100000000] (got -1)"}},
		{`{"context_tokens":99999999999999}`, []string{"context_tokens: must be in [0, 100000000] (got 99999999999999)"}},
		{`{"trace":{"synthetic":{"tokens":0,"sequences":0,"skew":-1,"reuse":2}}}`,
			[]string{"tokens (0) and prompt_tokens (0)", "sequences: must be >= 1", "skew: must be", "reuse: must be"}},
		{`{"trace":{"synthetic":{"skew":1e308}}}`, []string{"trace.synthetic.skew: must be a finite number in [0, 10] (got 1e+308)"}},
		// Every problem at once.
		{`{"layout":"zip","cache":{"bytes":-1},"speculative":{"block":0}}`, []string{"layout", "cache.bytes", "speculative.block"}},
	} {
		s, err := Parse([]byte(tc.json))
		if err != nil {
			t.Errorf("%s: %v", tc.json, err)
			continue
		}
		err = s.Validate()
		if err == nil {
			t.Errorf("%s: valid", tc.json)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant %q", tc.json, err, w)
			}
		}
	}
	if s, _ := Parse([]byte(`{}`)); s.Validate() != nil {
		t.Errorf("the empty spec (all defaults) is invalid: %v", s.Validate())
	}
}

// TestInlineProfileBounds: a spec's inline device profile (as a resolved
// spec or a sweep's device.profile axes carry it) is held to the bounds a
// device file is, every problem at once, named by its spec path.
func TestInlineProfileBounds(t *testing.T) {
	d, err := devices.LoadDevice(DefaultDevice)
	if err != nil {
		t.Fatal(err)
	}
	d.Flash.LatencyNS, d.MemBandwidth, d.Backend = math.MaxInt64, 1e-300, "GPU"
	s := DefaultSpec()
	s.Device = Device{Name: DefaultDevice, Profile: d}
	err = s.Validate()
	for _, want := range []string{
		"device.profile.flash.latency_ns: 9223372036854775807 ns is outside [1 us, 100 ms]",
		"device.profile.mem_bandwidth: 1e-300 B/s is outside [1 GB/s, 10 TB/s]",
		`device.profile.backend: "GPU" is not a backend`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// TestValidateNoVerdictOnUnknownNames: a spec with a misspelled policy or
// layout gets the unknown name, with the valid ones, and no "applies only"
// verdict that takes the misspelling for another policy or layout.
func TestValidateNoVerdictOnUnknownNames(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"policy":{"name":"lru2","les":{"top_n":3}}}`, `unknown policy "lru2"`},
		{`{"policy":{"name":"pinned","pinned_hot":{"pin_fraction":0.5}}}`, `unknown policy "pinned"`},
		{`{"layout":"bogus","mmap_neighbours":true,"page_cache":"free-ram","policy":{"name":"lru"}}`, `unknown layout "bogus"`},
		{`{"layout":"gguf-mmap","page_cache":"free-ram","policy":{"name":"lru2"}}`, `unknown policy "lru2"`},
	} {
		s, err := Parse([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		err = s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "applies only") || strings.Contains(err.Error(), "must be lru or ondemand") {
			t.Errorf("%s: got %v, want %q alone", tc.json, err, tc.want)
		}
	}
}
