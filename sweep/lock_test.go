package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/reports"
)

// holdRun starts a sweep of testGrid into dir as shard i/n whose points wait
// until the returned release is called; it returns once a point has started
// (the run holds the folder), and release waits for the run to end.
func holdRun(t *testing.T, dir string, opt Options) (release func() error) {
	t.Helper()
	g, pts := mustExpand(t, testGrid)
	started, gate := make(chan struct{}, len(pts)), make(chan struct{})
	opt.Out, opt.Version, opt.Workers = dir, "test", 1
	opt.Run = func(_ context.Context, in *experiment.Inputs, s experiment.Spec) (*experiment.Outcome, error) {
		started <- struct{}{}
		<-gate
		return simulate(in, s, false)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), g.Name, pts, opt)
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the held run ended: %v", err)
	}
	return func() error { close(gate); return <-done }
}

// TestConcurrentRunsRefused: while a sweep runs into a folder, a second
// sweep of the same shard (here with another --part-rows) or of another
// shard count is refused with ErrFolderBusy, and the folder ends with every
// point once; a sweep of another shard of the same count runs beside it.
func TestConcurrentRunsRefused(t *testing.T) {
	dir := t.TempDir()
	release := holdRun(t, dir, Options{PartRows: 5})
	g, pts := mustExpand(t, testGrid)
	for _, o := range []Options{{PartRows: 2}, {Shard: 1, Shards: 2}} {
		o.Out, o.Version = dir, "test"
		if _, err := Run(context.Background(), g.Name, pts, o); !errors.Is(err, ErrFolderBusy) {
			t.Errorf("a second run (shard %d/%d) beside a running one: got %v, want ErrFolderBusy", o.Shard, o.Shards, err)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if rows := rowSet(t, dir); len(rows) != 12 {
		t.Errorf("%d rows, want 12", len(rows))
	}

	shared := t.TempDir()
	release = holdRun(t, shared, Options{Shard: 0, Shards: 2})
	runGrid(t, testGrid, shared, Options{Shard: 1, Shards: 2})
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if rows := rowSet(t, shared); len(rows) != 12 {
		t.Errorf("two shards at once: %d rows, want 12", len(rows))
	}
}

// TestDuplicatePointRefused: a folder holding a point twice (a part copied
// under another name) is refused by a resumed run and by reports, each
// naming both parts.
func TestDuplicatePointRefused(t *testing.T) {
	dir := t.TempDir()
	runGrid(t, testGrid, dir, Options{PartRows: 5})
	parts, err := Parts(dir)
	if err != nil || len(parts) != 3 {
		t.Fatalf("parts %v, %v", parts, err)
	}
	data, err := os.ReadFile(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, partName(0, 1, 99))
	if err := os.WriteFile(copied, data, 0o644); err != nil {
		t.Fatal(err)
	}
	g, pts := mustExpand(t, testGrid)
	_, err = Run(context.Background(), g.Name, pts, Options{Out: dir, Version: "test"})
	if !errors.Is(err, ErrDuplicatePoint) {
		t.Errorf("resume: got %v, want ErrDuplicatePoint", err)
	}
	errgolden.Check(t, "resume", err) // NB: it names both parts
	_, err = reports.ReadResults(dir)
	if !errors.Is(err, reports.ErrDuplicatePoint) {
		t.Errorf("report: got %v, want ErrDuplicatePoint", err)
	}
	errgolden.Check(t, "report", err) // NB: it names both parts
}
