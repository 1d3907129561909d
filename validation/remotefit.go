package validation

import (
	"context"
	"fmt"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/runtime/live"
)

// FitRun runs fit point p once on the agent asking for its per-token
// series (protocol version 4, capability series), checks the result as
// Live does, and writes the series to Out/fit/POLICY-CACHE-rN.parquet (the
// file a local fit run writes) and reads it back.
func (r *remoteRunner) FitRun(ctx context.Context, p FitPoint, round, tokens int) (*runs.Run, error) {
	pt := &Point{Policy: p.Policy, Cache: p.Cache, CacheBytes: p.CacheBytes}
	raw, err := RemoteSpec(pt, tokens)
	if err != nil {
		return nil, err
	}
	res, samples, err := r.c.RunSeries(ctx, raw)
	if err != nil {
		return nil, err
	}
	if _, err := r.checked(res, pt, tokens); err != nil {
		return nil, err
	}
	series, err := LiveSeries(samples)
	if err != nil {
		return nil, err
	}
	return writeFitSeries(r.out, p, round, series)
}

// LiveSeries turns the token samples of a run that asked for its series
// (agent.Client.RunSeries) into the rows of runtime/live's per-token
// series: time_ns is wall_ns, pass the token. Every series field must be
// there, and hits, misses and resident bytes; absent read_bytes and reads
// are the stock page-fault path's (no reads issued), 0 as in its series.
func LiveSeries(samples []agent.TokenSample) ([]live.TokenSample, error) {
	out := make([]live.TokenSample, len(samples))
	for i, s := range samples {
		if m := s.MissingSeries(); m != "" {
			return nil, fmt.Errorf("token %d has no %s: not a per-token series", i, m)
		}
		if s.Hits == nil || s.Misses == nil || s.ResidentBytes == nil {
			return nil, fmt.Errorf("token %d lacks hits, misses or resident_bytes: not a per-token series", i)
		}
		if s.Pass != int64(i) || s.Tokens != 1 {
			return nil, fmt.Errorf("token %d is pass %d of %d tokens: a series has one token per pass, in order", i, s.Pass, s.Tokens)
		}
		out[i] = live.TokenSample{Token: i, WallNS: s.TimeNS, StallNS: s.StallNS, ComputeNS: *s.ComputeNS,
			BytesRead: deref(s.ReadBytes), Reads: deref(s.Reads), Hits: *s.Hits, InflightHits: *s.InflightHits,
			Misses: *s.Misses, PrefetchLoads: *s.PrefetchLoads, MajorFaults: *s.MajorFaults,
			ResidentBytes: *s.ResidentBytes, StrayBytes: *s.StrayBytes}
	}
	return out, nil
}

// deref is *v, or 0 when v is nil.
func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}
