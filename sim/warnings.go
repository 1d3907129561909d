package sim

import (
	"fmt"
	"strings"
)

// minTokensForTails is the decode token count below which p99 latency rests
// on fewer than ~1 sample in 100 and is flagged.
const minTokensForTails = 200

// warnings lists what a reader of the result should know about its inputs.
func warnings(e *engine, ctxTokens int) []string {
	var w []string
	r := &e.res
	if r.Tokens == 0 {
		w = append(w, "trace has no decode tokens: decode metrics are empty")
	} else if r.Tokens < minTokensForTails {
		w = append(w, fmt.Sprintf("trace too short: %d decode tokens (p99 latency needs >= %d)", r.Tokens, minTokensForTails))
	}
	if len(e.cfg.Device.Assumed) > 0 {
		w = append(w, fmt.Sprintf("device %s: assumed values (replace with measurements): %s",
			e.cfg.Device.Name, strings.Join(e.cfg.Device.Assumed, ", ")))
	}
	for _, dw := range e.cfg.Device.Warnings {
		w = append(w, fmt.Sprintf("device %s: %s", e.cfg.Device.Name, dw))
	}
	if total := e.m.TotalExpertBytes(); e.cfg.CacheBytes >= total {
		w = append(w, fmt.Sprintf("cache %s holds every expert (%s): only cold misses remain", FormatBytes(e.cfg.CacheBytes), FormatBytes(total)))
	}
	if e.cfg.PageCacheFreeRAM {
		w = append(w, fmt.Sprintf("page cache: the experts live in the kernel's page cache, sized by free RAM (%s), evicted in the %s policy's order as an approximation of the kernel's LRU",
			FormatBytes(e.cfg.CacheBytes), e.pol.Name()))
	}
	if budget := r.DeviceBudgetBytes; e.cfg.CacheBytes > budget {
		w = append(w, fmt.Sprintf("cache %s exceeds the device's expert budget %s (RAM %s - reserve %s - resident weights %s - KV for %d tokens %s): this configuration would not fit",
			FormatBytes(e.cfg.CacheBytes), FormatBytes(budget), FormatBytes(e.cfg.Device.RAMBytes), FormatBytes(e.cfg.Device.ReserveBytes),
			FormatBytes(e.m.NonExpertBytes), ctxTokens, FormatBytes(e.m.KVBytesPerToken*int64(ctxTokens))))
	}
	if r.OverBudgetLoads > 0 {
		w = append(w, fmt.Sprintf("a batch needed more distinct experts than the cache holds: %d loads went up to %s over the %s budget for their batch (prefill streams through the cache)",
			r.OverBudgetLoads, FormatBytes(r.OverBudgetBytes), FormatBytes(e.cfg.CacheBytes)))
	}
	if e.cfg.SpecFromTrace && r.Passes > 0 {
		w = append(w, "speculative passes from the trace: rejected drafts are not recorded, so their experts are not loaded")
	} else if e.cfg.SpecBlock > 1 && r.Passes > 0 {
		w = append(w, fmt.Sprintf("speculative decoding: verify blocks use the trace's next %d tokens' experts; rejected drafts are assumed to route like the trace", e.cfg.SpecBlock))
	}
	return w
}
