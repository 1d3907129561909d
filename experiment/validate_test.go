package experiment

import (
	"math"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
)

// TestValidateSpecFiles: a spec file is held to the same rules as flags, and
// every problem is listed at once.
func TestValidateSpecFiles(t *testing.T) {
	for _, tc := range []struct {
		json string
	}{
		{`{"version":2}`},
		{`{"trace":{"path":"t.parquet"},"model":{"name":"x"}}`},
		{`{"trace":{"path":"t.parquet","synthetic":{}}}`},
		{`{"trace":{"sha256":"abc"}}`},
		{`{"trace":{"path":"t","sha256":"ABC"}}`},
		{`{"predictor":{"recall":0.8}}`},
		{`{"trace":{"path":"t.parquet"},"predictor":{"recall":0.8},"policy":{"name":"lru"}}`},
		{`{"trace":{"path":"t.parquet"},"predictor":{"recall":0.8},"policy":{"name":"les","les":{"no_prefetch":true}}}`},
		{`{"trace":{"synthetic":{"lookahead_depth":0}},"predictor":{"recall":0}}`},
		{`{"policy":{"name":"lru","les":{"top_n":4}}}`},
		{`{"policy":{"name":"les","pinned_hot":{}}}`},
		{`{"policy":{"name":"les","les":{"no_prefetch":true,"depth":2}}}`},
		{`{"policy":{"name":"les","les":{"top_n":4,"threshold":0.5}}}`},
		{`{"policy":{"name":"les","les":{"max_candidates":4}}}`},
		{`{"policy":{"name":"les","les":{"threshold":1.5}}}`},
		{`{"policy":{"name":"pinned-hot","pinned_hot":{"pin_fraction":-0.1}}}`},
		{`{"policy":{"name":"fifo"}}`},
		{`{"trace":{"synthetic":{"lookahead_depth":0}}}`},
		{`{"trace":{"synthetic":{"lookahead_depth":1}},"policy":{"name":"les","les":{"depth":3}}}`},
		{`{"speculative":{"block":1}}`},
		{`{"speculative":{"block":65,"drafter":{"kind":"mtp"}}}`},
		{`{"speculative":{"drafter":{"kind":"explicit","bytes":9223372036854775807,"flops":1000000000000001}}}`},
		{`{"mmap_neighbours":true,"page_cache":"free-ram"}`},
		{`{"layout":"gguf-mmap","policy":{"name":"lru"},"cache":{"size":"3GiB"},"page_cache":"free-ram"}`},
		{`{"layout":"gguf-mmap","page_cache":"kernel"}`},
		{`{"speculative":{"accept":2}}`},
		{`{"trace":{"path":"t"},"speculative":{},"spec_from_trace":true}`},
		{`{"trace":{"path":"t"},"speculative":{"block":4,"accept":0.5,"drafter":{"kind":"ngram"}},"spec_from_trace":true}`},
		{`{"spec_from_trace":true}`},
		{`{"prefill":true}`},
		{`{"device":{"name":"a","file":"b"}}`},
		{`{"device":{"profile":{"name":"x"}}}`},
		{`{"cache":{"bytes":-1}}`},
		{`{"cache":{"size":"-2GiB"}}`},
		{`{"cache":{"size":"NaN%"}}`},
		{`{"cache":{"size":"lots"}}`},
		{`{"layout":"zip"}`},
		{`{"expert_quant":"Q9_K"}`},
		{`{"expert_quant":"q3_k"}`},
		{`{"context_tokens":-1}`},
		{`{"context_tokens":99999999999999}`},
		{`{"trace":{"synthetic":{"tokens":0,"sequences":0,"skew":-1,"reuse":2}}}`},
		{`{"trace":{"synthetic":{"skew":1e308}}}`},
		// Every problem at once.
		{`{"layout":"zip","cache":{"bytes":-1},"speculative":{"block":0}}`},
	} {
		s, err := Parse([]byte(tc.json))
		if err != nil {
			t.Errorf("%s: %v", tc.json, err)
			continue
		}
		errgolden.Check(t, tc.json, s.Validate())
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
	errgolden.Check(t, "bounds", s.Validate())
}

// TestValidateNoVerdictOnUnknownNames: a spec with a misspelled policy or
// layout gets the unknown name, with the valid ones, and no "applies only"
// verdict that takes the misspelling for another policy or layout.
func TestValidateNoVerdictOnUnknownNames(t *testing.T) {
	for _, tc := range []struct{ json string }{
		{`{"policy":{"name":"lru2","les":{"top_n":3}}}`},
		{`{"policy":{"name":"pinned","pinned_hot":{"pin_fraction":0.5}}}`},
		{`{"layout":"bogus","mmap_neighbours":true,"page_cache":"free-ram","policy":{"name":"lru"}}`},
		{`{"layout":"gguf-mmap","page_cache":"free-ram","policy":{"name":"lru2"}}`},
	} {
		s, err := Parse([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		err = s.Validate()
		errgolden.Check(t, tc.json, err)
	}
}
