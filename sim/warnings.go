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
	if budget := r.DeviceBudgetBytes; e.cfg.CacheBytes > budget && e.cfg.Device.AppLimitBytes > 0 && budget == appLimitBudget(e.m, e.cfg.Device, ctxTokens, e.cfg.ContextCost) {
		w = append(w, fmt.Sprintf("cache %s exceeds the device's expert budget %s (app limit %s - runtime %s - resident weights, KV for %d tokens and state %s)",
			FormatBytes(e.cfg.CacheBytes), FormatBudget(budget), FormatBytes(e.cfg.Device.AppLimitBytes), FormatBytes(e.cfg.Device.RuntimeBytes),
			ctxTokens, FormatBytes(ModelMemory(e.m, ctxTokens, e.cfg.ContextCost))))
	} else if e.cfg.CacheBytes > budget {
		state := ""
		if e.cfg.ContextCost {
			state = " - recurrent state " + FormatBytes(e.m.RecurrentStateBytes())
		}
		w = append(w, fmt.Sprintf("cache %s exceeds the device's expert budget %s (RAM %s - reserve %s - resident weights %s - KV for %d tokens %s%s): this configuration would not fit",
			FormatBytes(e.cfg.CacheBytes), FormatBudget(budget), FormatBytes(e.cfg.Device.RAMBytes), FormatBytes(e.cfg.Device.ReserveBytes),
			FormatBytes(e.m.NonExpertBytes), ctxTokens, FormatBytes(e.m.KVBytesPerToken*int64(ctxTokens)), state))
	}
	w = append(w, pressureWarnings(e)...)
	if r.OverBudgetLoads > 0 {
		w = append(w, fmt.Sprintf("a batch needed more distinct experts than the cache holds: %d loads went up to %s over the %s budget for their batch (prefill streams through the cache)",
			r.OverBudgetLoads, FormatBytes(r.OverBudgetBytes), FormatBytes(e.cfg.CacheBytes)))
	}
	if e.cfg.SpecFromTrace && r.Passes > 0 && r.RejectedDrafts == 0 {
		w = append(w, "speculative passes from the trace: it records no rejected drafts, so none is loaded")
	} else if e.cfg.SpecBlock > 1 && r.Passes > 0 {
		switch {
		case e.cfg.Drafter == "ngram":
			w = append(w, "speculative decoding: the n-gram drafter reads no weights; its lookup time is not charged")
		case e.cfg.Drafter == "controlled":
			w = append(w, "speculative decoding: the controlled drafter reads no weights; its lookup time is not charged")
		case e.draftTime == 0:
			w = append(w, fmt.Sprintf("speculative decoding: the drafter is free (its %d draft steps per pass cost no time), so the speed-up is an upper bound", e.cfg.SpecBlock-1))
		}
	}
	return w
}

// pressureWarnings says when the app's footprint exceeds the device's app
// limit (memory pressure): what is refaulted per pass, and whether even
// dropping every mapped weight would not be enough.
func pressureWarnings(e *engine) []string {
	p := &e.press
	if p.overflow <= 0 {
		return nil
	}
	d := e.cfg.Device
	w := []string{fmt.Sprintf("memory pressure: the app holds %s (cache %s + resident weights %s + KV for %d tokens %s + recurrent state %s + runtime %s), %s over the app limit %s: the OS drops mapped weights and %d faults re-read %s per pass on the compute thread",
		FormatBytes(p.footprint), FormatBytes(e.cfg.CacheBytes), FormatBytes(e.m.NonExpertBytes), p.ctxTokens, FormatBytes(e.m.KVBytesPerToken*int64(p.ctxTokens)),
		FormatBytes(ModelMemory(e.m, 0, e.cfg.ContextCost)-e.m.NonExpertBytes), FormatBytes(d.RuntimeBytes),
		FormatBytes(p.overflow), FormatBytes(d.AppLimitBytes), p.faults, FormatBytes(p.faults*p.chunk))}
	if p.overflow > e.m.NonExpertBytes {
		w = append(w, fmt.Sprintf("memory pressure: %s over the app limit is more than all mapped weights (%s): the rest is anonymous memory the OS cannot drop, so it would terminate the app (iOS jetsam); shrink the cache",
			FormatBytes(p.overflow), FormatBytes(e.m.NonExpertBytes)))
	}
	return w
}
