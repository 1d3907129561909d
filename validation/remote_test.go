package validation

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/atomicfile/atomictest"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sweep"
)

// simAgent serves the simulator engine (the iPhone 17 Pro Max profile,
// qwen3-30b-a3b loaded) on a loopback port until the test ends.
func simAgent(t *testing.T) (target, token string) {
	t.Helper()
	p, err := devices.LoadProfile("iphone-17-pro-max")
	if err != nil {
		t.Fatal(err)
	}
	e, err := agent.NewSimEngine(p, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadModel(context.Background(), "qwen3-30b-a3b"); err != nil {
		t.Fatal(err)
	}
	token, _ = agent.NewToken()
	ln, err := agent.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&agent.Server{Engine: e, Token: token, Agent: "validation test"}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "tcp://" + ln.Addr().String(), token
}

// runRemote validates on the agent at o.Target with token.
func runRemote(ctx context.Context, o Options, token string) (*Report, error) {
	return Run(ctx, o, func() (agent.Engine, error) { return agent.Dial(ctx, o.Target, token) })
}

// TestRunRemoteSimAgent: validate against the simulator agent, end to end
// through the protocol: the profile comes from the agent's calibrate, the
// trace from its record, the measurements from its runs. The agent
// simulates the very routing it recorded on the very profile it returned,
// so every point's prediction equals its measurement exactly: any
// difference would be the remote path losing or changing something.
func TestRunRemoteSimAgent(t *testing.T) {
	target, token := simAgent(t)
	ctx := context.Background()
	c, err := agent.Dial(ctx, target, token)
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.Calibrate(ctx, nil)
	facts := c.Facts()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	profile := filepath.Join(dir, "remote.yaml")
	if err := os.WriteFile(profile, y, 0o644); err != nil {
		t.Fatal(err)
	}
	var steps []string
	o := Options{Target: target, DeviceFile: profile, Policies: []string{"lru", "les"}, Caches: []string{"25%", "40%"},
		Tokens: 24, Repeats: 2, Out: filepath.Join(dir, "v"), Version: "test", Progress: func(s string) { steps = append(steps, s) }}
	rep, err := runRemote(ctx, o, token)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Facts == nil || *rep.Facts != facts || rep.Target != target {
		t.Errorf("report facts %+v at %q, want %+v at %q", rep.Facts, rep.Target, facts, target)
	}
	if len(steps) != 1+4+8 || steps[0] != "record" {
		t.Errorf("steps %q", steps)
	} else if got := steps[1:9]; !slices.Equal(got, []string{"live lru 25% 1/2", "live lru 40% 1/2", "live les 25% 1/2", "live les 40% 1/2",
		"live lru 40% 2/2", "live les 25% 2/2", "live les 40% 2/2", "live lru 25% 2/2"}) {
		t.Errorf("live runs in the order %q: round 2 must start at the second point", got)
	}
	if rep.Summary.MAPE != 0 || !rep.Summary.RankingPreserved {
		t.Errorf("MAPE %g%%, ranking preserved %v: the agent simulates what the host simulates", rep.Summary.MAPE, rep.Summary.RankingPreserved)
	}
	for _, p := range rep.Points {
		for _, m := range p.Measured {
			if m.TokensPerSec != p.Predicted.TokensPerSec || m.Hits != p.Predicted.Hits || m.Misses != p.Predicted.Misses || m.TimeNS != p.Predicted.TimeNS {
				t.Errorf("%s %s: measured %g tok/s %d/%d hits/misses, predicted %g %d/%d", p.Policy, p.Cache,
					m.TokensPerSec, m.Hits, m.Misses, p.Predicted.TokensPerSec, p.Predicted.Hits, p.Predicted.Misses)
			}
			if !strings.Contains(m.Device, facts.Model) || !strings.Contains(m.Device, target) || !strings.HasPrefix(m.Device, agent.KindSimulated) {
				t.Errorf("measured device %q lacks the agent's facts", m.Device)
			}
		}
	}
	// The files are staged beside Out until Commit; the report and its
	// specs name them at Out all along.
	trace := filepath.Join(o.Out, TraceFile)
	if _, err := os.Stat(o.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("out before Commit: %v, want absent", err)
	}
	if rep.Trace != trace {
		t.Errorf("report's trace %s, want %s", rep.Trace, trace)
	}
	for _, s := range rep.Specs {
		if s.Trace.Path != trace || s.Device.File != o.DeviceFile {
			t.Errorf("spec's trace %s and profile %s, want %s and %s", s.Trace.Path, s.Device.File, trace, o.DeviceFile)
		}
	}
	if err := rep.Stage.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(trace); err != nil {
		t.Errorf("the recorded trace: %v", err)
	}
	atomictest.NoTemporaries(t, dir)
	rows, id, err := Rows(rep.Points, rep.Specs, "test")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "results.parquet")
	if err := sweep.WriteRows(path, id, rows); err != nil {
		t.Fatal(err)
	}
	tab, err := reports.ReadTables(path)
	if err != nil || tab.Len() != 4+8 {
		t.Fatalf("rows read back: %v", err)
	}
	var devs int
	for i := range tab.Len() {
		if strings.Contains(tab.Str("device", i), target) {
			devs++
		}
	}
	if devs != 8 {
		t.Errorf("%d rows record the agent's device facts, want the 8 measured", devs)
	}
	var table bytes.Buffer
	if err := reports.WriteComparison(&table, rep.Summary); err != nil || !strings.Contains(table.String(), "MAPE (tokens/s): 0.0% over 4 points") {
		t.Errorf("table (%v):\n%s", err, table.String())
	}
}

// TestRunRemoteRefuses: local-only options, a bad target, a wrong token and
// an unreachable agent give clear errors.
func TestRunRemoteRefuses(t *testing.T) {
	target, token := simAgent(t)
	dir := t.TempDir()
	base := Options{Target: target, DeviceFile: "iphone-17-pro-max.yaml", Policies: []string{"lru"}, Caches: []string{"25%"},
		Tokens: 4, Repeats: 1, Out: dir}
	p, _ := devices.LoadProfile("iphone-17-pro-max")
	y, _ := p.YAML()
	base.DeviceFile = filepath.Join(dir, "p.yaml")
	os.WriteFile(base.DeviceFile, y, 0o644)
	for name, c := range map[string]struct {
		mut  func(*Options)
		want error // else the golden text
	}{
		"model":          {func(o *Options) { o.Model = "x.gguf" }, nil},
		"lanes":          {func(o *Options) { o.Lanes = 2 }, nil},
		"bad target":     {func(o *Options) { o.Target = "http://x:1" }, nil},
		"wrong token":    {func(*Options) {}, agent.ErrAuth},
		"unreachable":    {func(o *Options) { o.Target = "tcp://127.0.0.1:1" }, agent.ErrUnreachable},
		"tiny cache":     {func(o *Options) { o.Caches = []string{"1KiB"} }, nil},
		"bad fit":        {func(o *Options) { o.Fit = []string{"lru"} }, nil},
		"fit, no series": {func(o *Options) { o.Fit = []string{"lru:25%"} }, nil},
	} {
		o, tok := base, token
		if c.mut(&o); name == "wrong token" {
			tok = strings.Repeat("0", 32)
		}
		_, err := runRemote(context.Background(), o, tok)
		if c.want != nil {
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", name, err, c.want)
			}
			continue
		}
		if err != nil { // NB: the agent's port differs from run to run
			err = errors.New(strings.ReplaceAll(err.Error(), target, "tcp://AGENT"))
		}
		errgolden.Check(t, name, err)
	}
}

// TestRunRemoteFailureKeepsOut: a validation that fails after the agent
// recorded the trace (a cache too small for the trace's model, found only
// once the trace is there) leaves an existing Out with its old files
// byte-identical and an absent Out absent, and no staging folder behind.
func TestRunRemoteFailureKeepsOut(t *testing.T) {
	target, token := simAgent(t)
	dir := t.TempDir()
	p, _ := devices.LoadProfile("iphone-17-pro-max")
	y, _ := p.YAML()
	profile := filepath.Join(dir, "p.yaml")
	os.WriteFile(profile, y, 0o644)
	old := filepath.Join(dir, "old")
	os.MkdirAll(filepath.Join(old, "trace"), 0o755)
	os.WriteFile(filepath.Join(old, TraceFile), []byte("old trace"), 0o644)
	for _, out := range []string{old, filepath.Join(dir, "new")} {
		var steps []string
		o := Options{Target: target, DeviceFile: profile, Policies: []string{"lru"}, Caches: []string{"40%", "1KiB"},
			Tokens: 4, Repeats: 1, Out: out, Progress: func(s string) { steps = append(steps, s) }}
		_, err := runRemote(context.Background(), o, token)
		errgolden.Check(t, "tiny cache", err)
		if !slices.Equal(steps, []string{"record"}) {
			t.Fatalf("%s: steps %q, want the tiny cache refused after recording", out, steps)
		}
		atomictest.NoTemporaries(t, dir)
	}
	if b, err := os.ReadFile(filepath.Join(old, TraceFile)); err != nil || string(b) != "old trace" {
		t.Errorf("the old trace changed: %d bytes (%v), want the 9 of \"old trace\"", len(b), err)
	}
	if ents, _ := os.ReadDir(old); len(ents) != 1 {
		t.Errorf("old holds %d entries, want its trace folder only", len(ents))
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new: %v, want absent", err)
	}
}
