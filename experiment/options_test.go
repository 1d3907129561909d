package experiment

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/policies"
)

// TestEveryOptionChangesTheSpec: an option that applies always changes the
// spec (nothing is accepted and then ignored). Each option is tried where it
// applies, with a value that is not its default.
func TestEveryOptionChangesTheSpec(t *testing.T) {
	file := map[string]string{"trace": "t.parquet"}
	pred := map[string]string{"trace": "t.parquet", "predict-recall": "0.7"}
	spec := map[string]string{"spec-block": "3"}
	explicit := map[string]string{"spec-block": "3", "drafter": "explicit"}
	mmap := map[string]string{"layout": "gguf-mmap", "policy": "lru"}
	cases := map[string]struct {
		ctx   map[string]string
		value string
	}{
		"trace":                  {nil, "t.parquet"},
		"model":                  {nil, "qwen3-30b-a3b"},
		"variant":                {nil, "mixed-q3k-experts"},
		"expert-quant":           {nil, "q3_k"},
		"tokens":                 {nil, "10"},
		"predict-recall":         {file, "0.5"},
		"predict-fp":             {pred, "3"},
		"device":                 {nil, "ipad-pro-m4"},
		"device-file":            {nil, "my.yaml"},
		"policy":                 {nil, "lru"},
		"no-prefetch":            {nil, "true"},
		"threshold":              {nil, "0.9"},
		"top-n":                  {nil, "4"},
		"max-candidates":         {map[string]string{"threshold": "0.9"}, "5"},
		"depth":                  {nil, "2"},
		"max-inflight":           {nil, "64MiB"},
		"pin-fraction":           {map[string]string{"policy": "pinned-hot"}, "0.3"},
		"cache":                  {nil, "3GiB"},
		"layout":                 {nil, "gguf-mmap"},
		"cached-first":           {nil, "false"},
		"page-cache":             {mmap, "free-ram"},
		"mmap-neighbours":        {mmap, "true"},
		"barrier":                {nil, "true"},
		"spec-from-trace":        {file, "true"},
		"spec-block":             {nil, "2"},
		"spec-accept":            {spec, "0.5"},
		"spec-accept-from-trace": {map[string]string{"trace": "t.parquet", "spec-block": "3"}, "true"},
		"drafter":                {spec, "mtp"},
		"drafter-bytes":          {explicit, "100MB"},
		"drafter-flops":          {explicit, "1e9"},
		"prefill":                {file, "true"},
		"context":                {nil, "100"},
		"context-cost":           {nil, "true"},
		"seed":                   {nil, "5"},
		"trace-seed":             {nil, "5"},
		"predict-seed":           {pred, "5"},
		"accept-seed":            {spec, "5"},
		"draft-reuse":            {spec, "0.3"},
	}
	for _, o := range Options() {
		tc, ok := cases[o.Name]
		if !ok {
			t.Errorf("option %s: no case (add one)", o.Name)
			continue
		}
		base, err := FromOptions(tc.ctx)
		if err != nil {
			t.Fatalf("%s: context: %v", o.Name, err)
		}
		with := map[string]string{o.Name: tc.value}
		for k, v := range tc.ctx {
			with[k] = v
		}
		s, err := FromOptions(with)
		if err != nil {
			t.Errorf("%s %s: %v", o.Name, tc.value, err)
			continue
		}
		if s.Hash() == base.Hash() {
			t.Errorf("--%s %s changes nothing", o.Name, tc.value)
		}
	}
}

// TestOptionsThatDoNotApply: each is refused with its reason, whatever its value
// (set by the user is what counts, not a non-default value).
func TestOptionsThatDoNotApply(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
	}{
		{map[string]string{"trace": "t.parquet", "model": DefaultModel}},
		{map[string]string{"layout": "gguf-mmap", "barrier": "true"}},
		{map[string]string{"cached-first": "true", "barrier": "true"}},
		{map[string]string{"trace": "t.parquet", "variant": "q4_k_m"}},
		{map[string]string{"trace": "t.parquet", "tokens": "2000"}},
		{map[string]string{"trace": "t.parquet", "trace-seed": "1"}},
		{map[string]string{"trace": "t.parquet", "seed": "1"}},
		{map[string]string{"predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "predict-fp": "1.5"}},
		// A stated predictor only changes a run that reads lookahead scores.
		{map[string]string{"trace": "t.parquet", "policy": "lru", "predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "policy": "oracle", "predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "policy": "lfu", "predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "policy": "belady", "predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "policy": "ondemand", "predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "policy": "pinned-hot", "predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "no-prefetch": "true", "predict-recall": "0.8"}},
		{map[string]string{"trace": "t.parquet", "predict-recall": "0", "predict-seed": "1"}},
		{map[string]string{"device": "ipad-pro-m4", "device-file": "x.yaml"}},
		{map[string]string{"policy": "oracle", "no-prefetch": "false"}},
		{map[string]string{"no-prefetch": "true", "depth": "1"}},
		{map[string]string{"no-prefetch": "true", "max-inflight": "0"}},
		{map[string]string{"threshold": "0.8", "top-n": "8"}},
		{map[string]string{"max-candidates": "16"}},
		{map[string]string{"policy": "les", "pin-fraction": "0.5"}},
		{map[string]string{"spec-accept": "0.7"}},
		{map[string]string{"spec-block": "1", "accept-seed": "1"}},
		{map[string]string{"trace": "t.parquet", "spec-from-trace": "true", "spec-block": "4"}},
		{map[string]string{"trace": "t.parquet", "spec-from-trace": "true", "spec-accept": "0.7"}},
		{map[string]string{"spec-from-trace": "false"}},
		{map[string]string{"prefill": "false"}},
		{map[string]string{"page-cache": "budget"}},
		{map[string]string{"mmap-neighbours": "false"}},
		{map[string]string{"layout": "gguf-mmap", "cache": "3GiB", "page-cache": "free-ram"}},
		{map[string]string{"layout": "gguf-mmap", "page-cache": "lots"}},
		{map[string]string{"trce": "x"}},
		{map[string]string{"expert-quant": "Q9"}},
		{map[string]string{"expert-quant": ""}},
		{map[string]string{"depth": "0"}},
		{map[string]string{"pin-fraction": "0", "policy": "pinned-hot"}},
		{map[string]string{"spec-accept": "NaN", "spec-block": "2"}},
		{map[string]string{"draft-reuse": "1.5", "spec-block": "2", "drafter": "mtp"}},
		{map[string]string{"draft-reuse": "0.5", "trace": "t.parquet", "spec-from-trace": "true"}},
		{map[string]string{"max-inflight": "lots"}},
		{map[string]string{"drafter": "mtp"}},
		{map[string]string{"spec-block": "3", "drafter": "eagle"}},
		{map[string]string{"spec-block": "3", "drafter": "mtp", "drafter-bytes": "1MB"}},
		{map[string]string{"spec-block": "3", "drafter-flops": "1"}},
		{map[string]string{"spec-block": "3", "drafter": "explicit", "drafter-flops": "-1"}},
		{map[string]string{"spec-block": "3", "spec-accept-from-trace": "true"}},
		{map[string]string{"trace": "t.parquet", "spec-block": "3", "spec-accept-from-trace": "true", "spec-accept": "0.5"}},
	} {
		_, err := FromOptions(tc.opts)
		errgolden.Check(t, fmt.Sprint(tc.opts), err)
	}
}

// TestUnknownNamesBeforeApplicability: a misspelled name is reported with
// the valid ones, every one at once, and no option is judged inapplicable
// against it (nor against the default it failed to replace).
func TestUnknownNamesBeforeApplicability(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
	}{
		{map[string]string{"policy": "lru2", "top-n": "3"}},
		{map[string]string{"layout": "bogus", "page-cache": "free-ram"}},
		{map[string]string{"drafter": "nope", "drafter-bytes": "1MB"}},
		{map[string]string{"policy": "lru2", "layout": "bogus", "tokens": "x", "trce": "y"}},
	} {
		_, err := FromOptions(tc.opts)
		errgolden.Check(t, fmt.Sprint(tc.opts), err)
		if ie := (*InapplicableError)(nil); errors.As(err, &ie) {
			t.Errorf("%v: a verdict against an unknown name: %v", tc.opts, ie)
		}
	}
}

// TestSpecBlockOutOfRangeKeepsSpeculative: --spec-block beyond the largest
// block is refused alone; the speculative options given with it are not
// also called inapplicable ("which --spec-block N (N >= 2) turns on").
func TestSpecBlockOutOfRangeKeepsSpeculative(t *testing.T) {
	_, err := FromOptions(map[string]string{"spec-block": "65", "spec-accept": "0.5", "drafter": "mtp", "accept-seed": "2"})
	errgolden.Check(t, "range", err)
	if ie := (*InapplicableError)(nil); errors.As(err, &ie) {
		t.Errorf("got %v, want only --spec-block's range", err)
	}
}

// TestLESOptionsOnEveryOtherPolicy: every les option with every other policy.
func TestLESOptionsOnEveryOtherPolicy(t *testing.T) {
	lesOpts := map[string]string{"no-prefetch": "true", "threshold": "0.5", "top-n": "4", "max-candidates": "4", "depth": "1", "max-inflight": "1MiB"}
	for _, pol := range []string{"lru", "lfu", "ondemand", "oracle", "pinned-hot"} {
		for name, v := range lesOpts {
			_, err := FromOptions(map[string]string{"policy": pol, name: v})
			if !inapplicable(err, name) {
				t.Errorf("--policy %s --%s %s: %v, want --%s inapplicable", pol, name, v, err, name)
			}
		}
	}
}

func TestParseOptionValues(t *testing.T) {
	for _, o := range Options() {
		var bad []string
		switch o.Kind {
		case KindFloat:
			bad = []string{"NaN", "nan", "Inf", "-Inf", "+inf", "1e400", "x"}
		case KindInt, KindUint:
			bad = []string{"1.5", "x", "NaN"}
		case KindBool:
			bad = []string{"maybe"}
		case KindSize:
			bad = []string{"NaN", "lots", "-1MiB"}
		}
		for _, v := range bad {
			if _, err := o.Parse(v); err == nil {
				t.Errorf("--%s %s: parsed", o.Name, v)
			}
		}
		if _, err := o.Parse(o.Default); err != nil && o.Default != "" {
			t.Errorf("--%s: its default %q does not parse: %v", o.Name, o.Default, err)
		}
	}
}

// MaxDraftBytesText, which the messages quote, is MaxDraftBytes.
func TestMaxDraftBytesText(t *testing.T) {
	if b, err := devices.ParseSize(MaxDraftBytesText); err != nil || b != MaxDraftBytes {
		t.Fatalf("%q parses as %d (%v), MaxDraftBytes is %d", MaxDraftBytesText, b, err, MaxDraftBytes)
	}
}

// TestPolicyOptionsRefusedElsewhere: every option that only one policy reads
// (les's, the stated predictor's whose scores only les reads, pinned-hot's)
// is refused with every other policy, whatever its value.
func TestPolicyOptionsRefusedElsewhere(t *testing.T) {
	owner := map[string]string{"predict-recall": "les", "predict-fp": "les", "predict-seed": "les", "pin-fraction": "pinned-hot"}
	for _, o := range Options() {
		if strings.HasPrefix(o.Usage, "les:") {
			owner[o.Name] = "les"
		}
	}
	value := map[string]string{"predict-recall": "0.8", "predict-fp": "2", "predict-seed": "3", "pin-fraction": "0.3",
		"no-prefetch": "true", "threshold": "0.9", "top-n": "4", "max-candidates": "5", "depth": "2", "max-inflight": "64MiB"}
	for name, pol := range owner {
		if value[name] == "" {
			t.Fatalf("option %s: no value (add one)", name)
		}
		for _, other := range policies.Names() {
			if other == pol {
				continue
			}
			opts := map[string]string{"trace": "t.parquet", "policy": other, name: value[name]}
			if strings.HasPrefix(name, "predict-") && name != "predict-recall" {
				opts["predict-recall"] = "0.8"
			}
			_, err := FromOptions(opts)
			if !inapplicable(err, name) {
				t.Errorf("--policy %s --%s %s: %v, want --%s inapplicable", other, name, value[name], err, name)
			}
		}
	}
}

// inapplicable reports whether err holds an InapplicableError of option
// name (errors.Join lists every problem).
func inapplicable(err error, name string) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return slices.ContainsFunc(j.Unwrap(), func(e error) bool { return inapplicable(e, name) })
	}
	ie := (*InapplicableError)(nil)
	return errors.As(err, &ie) && ie.Option == name
}
