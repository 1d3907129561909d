package live

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
)

// TestOptionsValidateBounds: tokens past the recorder's context, threads
// and lanes past their caps, and a stated lookahead depth below 1 are
// refused before llama.cpp loads anything; -1 keeps the policy's depth and
// prefetch off makes the depth unused.
func TestOptionsValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Tokens = 4294967297 }, "tokens 4294967297: exceeds the 65536-token context"},
		{func(o *Options) { o.Threads = 100000 }, "threads 100000: want 1..256"},
		{func(o *Options) { o.Lanes = -1 }, "lanes -1: want 1..256"},
		{func(o *Options) { o.Depth = 0 }, "depth 0: must be >= 1 (use --no-prefetch"},
		{func(o *Options) { o.Depth = -2 }, "depth -2: must be >= 1"},
		{func(o *Options) { o.Policy = "lru2" }, `unknown policy "lru2" (valid: belady, les, lfu, lru, ondemand, oracle, pinned-hot)`},
		{func(o *Options) { o.Policy = "ondemnd"; o.Stock = true }, `unknown policy "ondemnd"`},
		{func(o *Options) { o.Policy = "belady" }, "policy belady reads the whole trace's routing in advance, which a live run does not know: a live run takes les, lfu, lru, ondemand"},
		{func(o *Options) { o.Policy = "pinned-hot"; o.Stock = true }, "policy pinned-hot reads the whole trace's routing"},
	} {
		o := DefaultOptions()
		o.Model, o.Cache = "m.gguf", 1<<20
		tc.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "does not fit") {
			t.Errorf("want %q alone, got %v", tc.want, err)
		}
	}
	o := DefaultOptions()
	o.Model, o.Cache, o.Depth, o.Prefetch = "m.gguf", 1<<20, 0, false
	if err := o.Validate(); err != nil {
		t.Errorf("depth 0 with prefetch off: %v", err)
	}
}

// TestResolveCacheLive: a live run's cache errors suggest only the forms it
// takes (no auto).
func TestResolveCacheLive(t *testing.T) {
	m, err := devices.LookupModel(devices.Qwen3_30BA3B, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{"0", "auto", "12 parsecs"} {
		_, err := ResolveCache(size, m)
		if err == nil || strings.Contains(err.Error(), "or auto") {
			t.Errorf("cache %q: %v", size, err)
		}
	}
	if b, err := ResolveCache("1GiB", m); err != nil || b != 1<<30 {
		t.Errorf("1GiB: %d, %v", b, err)
	}
}
