package policies

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lessim/lessim/sim"
)

// constructor builds a policy from Params (it resolves defaults and validates).
type constructor func(p Params) (sim.Policy, error)

// build adapts a typed constructor to the registry.
func build[T sim.Policy](f func(Params) (T, error)) constructor {
	return func(p Params) (sim.Policy, error) {
		pol, err := f(p)
		if err != nil {
			return nil, err
		}
		return pol, nil
	}
}

type entry struct {
	ctor  constructor
	about string
}

// registry is the one list of policies: adding a policy is one file and one line here.
var registry = map[string]entry{
	"lru":        {build(NewLRU), "evict the least recently used expert; no prefetch"},
	"ondemand":   {build(NewOnDemand), "stock baseline: load on demand, evict LRU (same behaviour as lru; the ablation's first step)"},
	"lfu":        {build(NewLFU), "evict the least frequently used expert (uses counted over the whole run), ties LRU; no prefetch"},
	"les":        {build(NewLES), "lookahead expert scheduling: prefetch the next layers' top router candidates, LRU eviction that protects prefetches"},
	"oracle":     {build(NewOracle), "hit-rate reference, not a throughput bound: Belady eviction plus perfect one-layer-ahead prefetch (reads the whole trace)"},
	"belady":     {build(NewBelady), "classic Belady MIN: demand admission, evict the expert used farthest in the future (reads the whole trace); the demand-paging hit-rate bound"},
	"pinned-hot": {build(NewPinnedHot), "pin the trace's most popular experts (PinFraction of the cache), LRU for the rest"},
}

// Names lists the registered policy names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// readsWholeTrace are the policies built from the whole trace's routing
// (its future, or its popularity over every step): a run that decodes live
// does not know it in advance.
var readsWholeTrace = []string{"belady", "oracle", "pinned-hot"}

// CheckLive refuses a policy a live run (lessim live, validate) cannot run:
// one that reads the whole trace, naming the ones it can. Check the name
// first (CheckName).
func CheckLive(name string) error {
	if !slices.Contains(readsWholeTrace, name) {
		return nil
	}
	var live []string
	for _, n := range Names() {
		if !slices.Contains(readsWholeTrace, n) {
			live = append(live, n)
		}
	}
	return fmt.Errorf("policy %s reads the whole trace's routing in advance, which a live run does not know: a live run takes %s", name, strings.Join(live, ", "))
}

// Describe is the one-line description of a policy ("" for unknown names).
func Describe(name string) string { return registry[name].about }

// New builds the policy called name from p. Zero fields of p take the defaults
// documented on Params; an unknown name or invalid params give an error that
// lists the valid names or every problem at once.
func New(name string, p Params) (sim.Policy, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return registry[name].ctor(p)
}

// CheckName refuses a name that is no registered policy, listing the valid
// ones. Check it before judging a setting against the policy: a setting of
// les beside a misspelled policy is a typo, not another policy's option.
func CheckName(name string) error {
	if _, ok := registry[name]; !ok {
		return fmt.Errorf("unknown policy %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return nil
}
