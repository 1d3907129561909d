package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/sim"
)

// Header is what a result's text rendering says about its inputs, one
// "key value" line each, in order.
type Header [][2]string

// WriteResult renders r as an aligned, deterministic text block.
func WriteResult(w io.Writer, h Header, r *sim.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, kv := range h {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	if len(h) > 0 {
		fmt.Fprintln(tw)
	}
	mean := int64(0)
	if r.Tokens > 0 {
		mean = r.TimeNS / r.Tokens
	}
	fmt.Fprintf(tw, "throughput\t%.2f tok/s\t(%s per token mean, %s in %s)\n", r.TokensPerSec, ms(mean), plural.Count(int(r.Tokens), "token"), plural.CountAs(int(r.Passes), "pass", "passes"))
	fmt.Fprintf(tw, "latency\tp50 %s\tp90 %s  p99 %s  max %s\n", ms(r.LatencyP50NS), ms(r.LatencyP90NS), ms(r.LatencyP99NS), ms(r.LatencyMaxNS))
	// NB: a measured run's unmeasured fields are zero; they read as such.
	na := func(field, v string) string {
		if slices.Contains(r.Unmeasured, field) {
			return "not measured"
		}
		return v
	}
	// NB: a group none of whose fields was measured (stock mode's stall and
	// flash) is one "not measured", not the word after every label.
	none := func(fields ...string) bool {
		for _, f := range fields {
			if !slices.Contains(r.Unmeasured, f) {
				return false
			}
		}
		return true
	}
	if none("stall_ns", "stall_flash_ns", "stall_fault_cpu_ns", "demand_queue_wait_ns") {
		fmt.Fprintf(tw, "time\tcompute %s\tstall not measured\n", secs(r.ComputeNS))
	} else {
		fmt.Fprintf(tw, "time\tcompute %s\tstall %s: flash wait %s, fault CPU %s; demand reads queued %s\n",
			secs(r.ComputeNS), na("stall_ns", secs(r.StallNS)+" ("+pct(r.StallNS, r.TimeNS)+")"), na("stall_flash_ns", secs(r.StallFlashNS)),
			na("stall_fault_cpu_ns", secs(r.StallFaultCPUNS)), na("demand_queue_wait_ns", secs(r.DemandQueueWaitNS)))
	}
	if r.DraftNS > 0 || r.RejectedDrafts > 0 {
		fmt.Fprintf(tw, "drafting\t%s\t(%s) on the compute thread; %d drafts rejected, their experts loaded as their own\n", secs(r.DraftNS), pct(r.DraftNS, r.TimeNS), r.RejectedDrafts)
	}
	if r.LoadCPUNS > 0 {
		fmt.Fprintf(tw, "loading\t%s\t(%s) on the compute thread: commit, copy, bookkeeping of loaded experts\n", secs(r.LoadCPUNS), pct(r.LoadCPUNS, r.TimeNS))
	}
	if r.ContextNS > 0 {
		fmt.Fprintf(tw, "context\t%s\t(%s) of compute on KV-cache reads, attention and recurrent state\n", secs(r.ContextNS), pct(r.ContextNS, r.TimeNS))
	}
	if r.PressureFaults > 0 {
		fmt.Fprintf(tw, "pressure\t%s\t(%s) of stall refaulting dropped weights: %d faults, %s/token (app footprint %s)\n",
			secs(r.PressureNS), pct(r.PressureNS, r.TimeNS), r.PressureFaults, sim.FormatBytes(perToken(r.PressureFaultBytes, r.Tokens)), sim.FormatBytes(r.AppFootprintBytes))
	}
	if r.GPUSyncNS > 0 {
		fmt.Fprintf(tw, "gpu sync\t%s\t(%s, part of compute) host-device synchronisations: top-k and lookahead read on the host\n", secs(r.GPUSyncNS), pct(r.GPUSyncNS, r.TimeNS))
	}
	if none("flash_bytes_per_token", "flash_reads", "flash_bytes", "flash_busy_ns") {
		fmt.Fprintf(tw, "flash\tnot measured\n")
	} else {
		fmt.Fprintf(tw, "flash\t%s\t%s reads, %s total, busy %s\n",
			na("flash_bytes_per_token", sim.FormatBytes(int64(r.FlashBytesPerToken))+"/token"), na("flash_reads", fmt.Sprint(r.FlashReads)),
			na("flash_bytes", sim.FormatBytes(r.FlashBytes)), na("flash_busy_ns", pct(r.FlashBusyNS, r.TimeNS)+" of the time"))
	}
	fmt.Fprintf(tw, "cache\thit rate %.3f\t%d uses: %d hits, %d in flight, %d misses; peak %s of %s\n",
		r.HitRate, r.Uses, r.Hits, r.InflightHits, r.Misses, sim.FormatBytes(r.PeakResidentBytes), sim.FormatBytes(r.CacheBytes))
	if r.NeighbourLoads > 0 {
		fmt.Fprintf(tw, "neighbours\t%d experts\t(%s) made resident by other experts' read-around and read-ahead\n", r.NeighbourLoads, sim.FormatBytes(r.NeighbourBytes))
	}
	if r.PrefetchRequested > 0 {
		wasted := 0.0
		if r.Tokens > 0 {
			wasted = float64(r.WastedPrefetchBytes) / float64(r.Tokens)
		}
		fmt.Fprintf(tw, "prefetch\trecall %.3f\tprecision %.3f; %d loads (%s), %d used, wasted %s/token\n",
			r.PrefetchRecall, r.PrefetchPrecision, r.PrefetchLoads, sim.FormatBytes(r.PrefetchBytes), r.PrefetchUseful, sim.FormatBytes(int64(wasted)))
	}
	if r.PrefillTokens > 0 {
		fmt.Fprintf(tw, "prefill\t%s\tin %s (not in decode metrics)\n", plural.Count(int(r.PrefillTokens), "token"), secs(r.PrefillNS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
	return nil
}

func ms(ns int64) string { return fmt.Sprintf("%.2f ms", float64(ns)/1e6) }

func secs(ns int64) string {
	if ns < 1e9 && ns > -1e9 {
		return ms(ns)
	}
	return fmt.Sprintf("%.3f s", float64(ns)/1e9)
}

func pct(a, b int64) string {
	if b == 0 {
		return "0%"
	}
	return strings.TrimSpace(fmt.Sprintf("%5.1f%%", 100*float64(a)/float64(b)))
}

// perToken is n / tokens, or 0 without tokens.
func perToken(n, tokens int64) int64 {
	if tokens == 0 {
		return 0
	}
	return n / tokens
}
