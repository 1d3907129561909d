package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lessim/lessim/sim"
)

func (k *checker) loadModel(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var info ModelInfo
	err = k.whenFree(func() error {
		var err error
		info, err = c.LoadModel(ctx, k.o.Model)
		return err
	})
	if err != nil {
		return "", err
	}
	if info.Layers < 1 || info.Experts < 2 || info.TopK < 1 || info.TopK > info.Experts || info.TotalExpertBytes <= 0 {
		return "", fmt.Errorf("implausible model info %+v", info)
	}
	return fmt.Sprintf("%s: %d MoE layers × %d experts, top-%d, %s of experts", info.Name, info.Layers, info.Experts, info.TopK, sim.FormatBytes(info.TotalExpertBytes)), nil
}

func (k *checker) loadUnknown(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := k.whenFree(func() error { _, err := c.LoadModel(ctx, "no-such-model-for-lessim-check"); return err }); !errors.Is(err, ErrRefused) {
		return "", fmt.Errorf("got %v, want error %s", err, CodeInvalidSpec)
	}
	if err := c.Ping(ctx); err != nil {
		return "", fmt.Errorf("connection unusable after the refusal: %w", err)
	}
	return "error invalid_spec, connection still usable", nil
}

// invalidSpec adds a field no spec has: engines refuse what they would ignore.
func (k *checker) invalidSpec(ctx context.Context) (string, error) {
	var m map[string]any
	if err := json.Unmarshal(k.o.Spec, &m); err != nil {
		return "", fmt.Errorf("the check's spec: %v", err)
	}
	m["no_such_field_lessim_check"] = true
	bad, _ := json.Marshal(m)
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := k.whenFree(func() error { _, err := c.Run(ctx, bad, nil); return err }); !errors.Is(err, ErrRefused) {
		return "", fmt.Errorf("a spec with an unknown field: got %v, want error %s", err, CodeInvalidSpec)
	}
	if err := c.Ping(ctx); err != nil {
		return "", fmt.Errorf("connection unusable after the refusal: %w", err)
	}
	return "error invalid_spec, connection still usable", nil
}

func (k *checker) run(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var samples []TokenSample
	start := time.Now()
	var res *sim.Result
	err = k.whenFree(func() error {
		samples = samples[:0]
		var err error
		res, err = c.Run(ctx, k.o.Spec, func(s TokenSample) error { samples = append(samples, s); return nil })
		return err
	})
	if err != nil {
		return "", err
	}
	if err := CheckRun(samples, res); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d passes, %d tokens, %.2f tok/s, hit rate %.3f, %d samples valid, %v wall", res.Passes, res.Tokens, res.TokensPerSec, res.HitRate, len(samples), time.Since(start).Round(time.Millisecond)), nil
}

// CheckRun checks a run's samples against each other and its Result: units
// and ranges, passes in order without overlap, counts and sums that agree,
// ratios that match their counters.
func CheckRun(samples []TokenSample, r *sim.Result) error {
	if r == nil {
		return errors.New("no result")
	}
	if len(samples) == 0 || int64(len(samples)) != r.Passes {
		return fmt.Errorf("%d samples for %d passes", len(samples), r.Passes)
	}
	var tokens, sumTime, sumStall int64
	var end int64
	for i, s := range samples {
		if err := s.Validate(); err != nil {
			return err
		}
		if s.Pass != int64(i) {
			return fmt.Errorf("sample %d is pass %d", i, s.Pass)
		}
		if s.StartNS < end {
			return fmt.Errorf("pass %d starts at %d ns, before pass %d ended (%d ns)", i, s.StartNS, i-1, end)
		}
		end = s.StartNS + s.TimeNS
		tokens += int64(s.Tokens)
		sumTime += s.TimeNS
		sumStall += s.StallNS
	}
	if tokens != r.Tokens {
		return fmt.Errorf("samples carry %d tokens, the result %d", tokens, r.Tokens)
	}
	if samples[0].StartNS != 0 {
		return fmt.Errorf("the first pass starts at %d ns, not 0 (start_ns counts from the first pass)", samples[0].StartNS)
	}
	if slack := r.TimeNS/100 + int64(time.Millisecond); end < r.TimeNS-slack || end > r.TimeNS+slack || sumTime > end {
		return fmt.Errorf("the last pass ends at %d ns (passes take %d ns in all); the result's time_ns is %d: they must agree within 1%% + 1 ms",
			end, sumTime, r.TimeNS)
	}
	if sumStall > r.StallNS+r.StallNS/100+int64(time.Microsecond) {
		return fmt.Errorf("passes stall %d ns, above the result's stall_ns %d", sumStall, r.StallNS)
	}
	if r.TimeNS <= 0 || r.StallNS < 0 || r.StallNS > r.TimeNS || r.ComputeNS < 0 || r.FlashBytes < 0 || r.FlashReads < 0 || r.PeakResidentBytes < 0 {
		return fmt.Errorf("result: time_ns %d, stall_ns %d, compute_ns %d, flash_bytes %d, flash_reads %d, peak_resident_bytes %d out of range",
			r.TimeNS, r.StallNS, r.ComputeNS, r.FlashBytes, r.FlashReads, r.PeakResidentBytes)
	}
	if r.Hits < 0 || r.InflightHits < 0 || r.Misses < 0 || r.Hits+r.InflightHits+r.Misses != r.Uses {
		return fmt.Errorf("result: hits %d + inflight_hits %d + misses %d != uses %d", r.Hits, r.InflightHits, r.Misses, r.Uses)
	}
	if !(r.LatencyP50NS <= r.LatencyP90NS && r.LatencyP90NS <= r.LatencyP99NS && r.LatencyP99NS <= r.LatencyMaxNS && r.LatencyMaxNS <= r.TimeNS) {
		return fmt.Errorf("result: latency percentiles %d ≤ %d ≤ %d ≤ %d ≤ time_ns %d do not hold", r.LatencyP50NS, r.LatencyP90NS, r.LatencyP99NS, r.LatencyMaxNS, r.TimeNS)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"tokens_per_sec", r.TokensPerSec, float64(r.Tokens) * 1e9 / float64(r.TimeNS)},
		{"hit_rate", r.HitRate, ratio(r.Hits, r.Uses)},
		{"accepted_per_pass", r.AcceptedPerPass, ratio(r.Tokens, r.Passes)},
		{"flash_bytes_per_token", r.FlashBytesPerToken, ratio(r.FlashBytes, r.Tokens)},
	} {
		if math.IsNaN(f.got) || math.Abs(f.got-f.want) > 1e-6*math.Max(1, math.Abs(f.want)) {
			return fmt.Errorf("result: %s %g, its counters give %g", f.name, f.got, f.want)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"hit_rate", r.HitRate}, {"prefetch_recall", r.PrefetchRecall}, {"prefetch_precision", r.PrefetchPrecision}} {
		if f.v < 0 || f.v > 1 {
			return fmt.Errorf("result: %s %g outside [0,1]", f.name, f.v)
		}
	}
	return nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// series: an agent announcing CapSeries sends every series field on every
// token of a run that asks, consistent with the result; one that does not
// refuses such a run with invalid_spec and stays usable.
func (k *checker) series(ctx context.Context) (string, error) {
	c, err := k.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if !slices.Contains(k.welcome.Capabilities, CapSeries) {
		err := k.whenFree(func() error { _, err := c.run(ctx, Run{Spec: k.o.Spec, Series: true}, nil); return err })
		if !errors.Is(err, ErrRefused) {
			return "", fmt.Errorf("a run asking for its series from an agent without %s: got %v, want error %s", CapSeries, err, CodeInvalidSpec)
		}
		if err := c.Ping(ctx); err != nil {
			return "", fmt.Errorf("connection unusable after the refusal: %w", err)
		}
		return fmt.Sprintf("not announced: error %s, connection still usable", CodeInvalidSpec), nil
	}
	var res *sim.Result
	var samples []TokenSample
	err = k.whenFree(func() error {
		var err error
		res, samples, err = c.RunSeries(ctx, k.o.Spec)
		return err
	})
	if err != nil {
		return "", err
	}
	if err := CheckRun(samples, res); err != nil {
		return "", err
	}
	var faults int64
	for _, s := range samples {
		faults += *s.MajorFaults
	}
	return fmt.Sprintf("%d passes, each with %s; %d major faults", len(samples), seriesNames, faults), nil
}

// seriesNames lists the series fields, for messages.
var seriesNames = func() string {
	var s TokenSample
	var n []string
	for _, f := range s.seriesFields() {
		n = append(n, f.n)
	}
	return strings.Join(n, ", ")
}()
