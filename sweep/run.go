package sweep

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
)

// RunFunc runs one point: it resolves the spec through in (shared by every
// point of the same trace, so the trace is loaded once) and simulates it. It
// is called from several goroutines at once and must not modify what it
// shares with other calls (the trace's steps).
type RunFunc func(ctx context.Context, in *experiment.Inputs, s experiment.Spec) (*experiment.Outcome, error)

// Simulate is the RunFunc of lessim sweep: experiment's Resolve, then Run.
func Simulate(_ context.Context, in *experiment.Inputs, s experiment.Spec) (*experiment.Outcome, error) {
	return simulate(in, s, false)
}

// simulate resolves and runs s, keeping per-pass samples when keepSeries.
func simulate(in *experiment.Inputs, s experiment.Spec, keepSeries bool) (*experiment.Outcome, error) {
	p, err := in.Resolve(s)
	if err != nil {
		return nil, err
	}
	p.Config.KeepSeries = keepSeries
	return p.Run()
}

// Options says where and how a sweep runs.
type Options struct {
	// Out is the results folder (created if needed).
	Out string
	// Shard and Shards select the points whose index mod Shards is Shard
	// (0 <= Shard < Shards); Shards 0 means 1.
	Shard, Shards int
	// Workers is how many points run at once; 0 means GOMAXPROCS.
	Workers int
	// PartRows is how many rows a part holds at most; 0 means 64. The
	// points of the shard still to run are cut, in the order they run, into
	// parts of PartRows points, each written when its last point finishes.
	PartRows int
	// Version is lessim's version, stored in the rows and manifest.
	Version string
	// Config is the resolved sweep file written beside the results as
	// sweep.yaml when the folder is new (see ResolvedConfig).
	Config []byte
	// ConfigPath is the sweep file Config was read from, if any: a new
	// folder whose sweep.yaml would be that file is refused.
	ConfigPath string
	// Run runs one point; nil means Simulate (keeping per-pass samples
	// when KeepSeries is set).
	Run RunFunc
	// KeepSeries keeps each run's per-pass samples (the series.* columns,
	// from which a report draws exact latency distributions); it changes no
	// other number.
	KeepSeries bool
	// NewInputs makes the Inputs shared by the points of one trace; nil
	// means a zero experiment.Inputs (files read with its default reader).
	NewInputs func() *experiment.Inputs
	// Progress, when set, is called after each finished point with the
	// number done (skipped points included) and the shard's total.
	Progress func(done, total int)
}

// check refuses options out of range, before anything is written.
func (opt *Options) check() error {
	var errs []error
	if opt.Shards < 1 || opt.Shard < 0 || opt.Shard >= opt.Shards {
		errs = append(errs, fmt.Errorf("shard %d/%d: want 0 <= shard < shards", opt.Shard, opt.Shards))
	}
	if opt.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d: want >= 0 (0 = GOMAXPROCS)", opt.Workers))
	}
	if opt.PartRows < 0 {
		errs = append(errs, fmt.Errorf("part rows %d: want >= 0 (0 = 64)", opt.PartRows))
	}
	return errors.Join(errs...)
}

// Summary is what a sweep did.
type Summary struct {
	SweepID string
	Points  int    // points in the grid
	Shard   string // "i/n"
	Mine    int    // points of this shard
	Skipped int    // finished earlier (found in the folder's parts)
	Ran     int    // run now
	Failed  int    // of Mine, points whose row has an Error (run now or before)
	// FailedBefore is, of Failed, the points whose failed row was found in
	// the folder: they are not run again (a failure is deterministic).
	FailedBefore int
	// FailedParts are the parts holding those rows, sorted: deleting them
	// runs their points again (the rows that ran too).
	FailedParts []string
	Parts       []string // part files written now
	// Errors are the errors of the failed points of lowest index, at most
	// maxErrors, in index order ("point N: error"), whatever order the
	// points finished in.
	Errors   []string
	errIndex []int // Errors' point indices
}

// maxErrors is how many point errors a Summary keeps.
const maxErrors = 5

// failed counts a failed point and keeps its error when it is among the
// maxErrors of lowest index.
func (s *Summary) failed(index int, msg string) {
	s.Failed++
	at, _ := slices.BinarySearch(s.errIndex, index)
	if at == maxErrors {
		return
	}
	s.errIndex = slices.Insert(s.errIndex, at, index)
	s.Errors = slices.Insert(s.Errors, at, fmt.Sprintf("point %d: %s", index, msg))
	if len(s.Errors) > maxErrors {
		s.errIndex, s.Errors = s.errIndex[:maxErrors], s.Errors[:maxErrors]
	}
}

// SweepID is the hash of the points' ids in order: a grid's identity.
func SweepID(points []Point) string {
	h := sha256.New()
	for _, p := range points {
		h.Write([]byte(p.ID))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ShardPoints is the points of shard i of n: those whose index mod n is i.
func ShardPoints(points []Point, shard, shards int) []Point {
	var out []Point
	for _, p := range points {
		if p.Index%shards == shard {
			out = append(out, p)
		}
	}
	return out
}

// Run runs the points of opt's shard that are not already in opt.Out, in
// parallel, writing their rows in parts as they finish. It refuses a folder
// holding another sweep or another results format. A point that fails gets
// a row with its Error; a rerun does not retry it but counts it again in
// Summary.Failed (FailedBefore), so every run reports it. Run itself fails on
// bad options, an unusable folder, a write error, or a cancelled ctx (after
// writing the rows of the points already finished).
func Run(ctx context.Context, gridName string, points []Point, opt Options) (*Summary, error) {
	if opt.Shards == 0 {
		opt.Shards = 1
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	if opt.Run == nil {
		keep := opt.KeepSeries
		opt.Run = func(_ context.Context, in *experiment.Inputs, s experiment.Spec) (*experiment.Outcome, error) {
			return simulate(in, s, keep)
		}
	}
	if len(points) == 0 {
		return nil, errors.New("sweep: empty grid")
	}
	opt.Workers = cmp.Or(opt.Workers, runtime.GOMAXPROCS(0))
	opt.PartRows = cmp.Or(opt.PartRows, 64)
	sum := &Summary{SweepID: SweepID(points), Points: len(points), Shard: fmt.Sprintf("%d/%d", opt.Shard, opt.Shards)}
	man := Manifest{FormatVersion: FormatVersion, SweepID: sum.SweepID, Points: len(points), LessimVersion: opt.Version, Grid: gridName}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, fmt.Errorf("results folder: %w", err)
	}
	release, err := lockFolder(opt.Out, opt.Shard, opt.Shards)
	defer release()
	if err != nil {
		return nil, err
	}
	done, err := prepareFolder(opt.Out, man, opt.Config, opt.ConfigPath)
	if err != nil {
		return nil, err
	}
	// A part being written when a run was killed (SIGKILL, a lost node)
	// left its temporary; readers skip it, and a resumed run removes it once
	// no shard holds it (atomicfile.RemoveStale).
	atomicfile.RemoveStale(opt.Out, "."+partPrefix)
	mine := ShardPoints(points, opt.Shard, opt.Shards)
	sum.Mine = len(mine)
	var todo []Point
	for _, p := range mine {
		if d, ok := done[p.ID]; ok {
			sum.Skipped++
			if d.err != "" {
				sum.FailedBefore++
				sum.failed(p.Index, d.err+" (in a part written before; not retried)")
				if !slices.Contains(sum.FailedParts, d.part) {
					sum.FailedParts = append(sum.FailedParts, d.part)
				}
			}
		} else {
			todo = append(todo, p)
		}
	}
	slices.Sort(sum.FailedParts)
	seq, err := nextSeq(opt.Out, opt.Shard, opt.Shards)
	if err != nil {
		return nil, err
	}
	if opt.Progress != nil {
		opt.Progress(sum.Skipped, sum.Mine)
	}
	return sum, runAndWrite(ctx, todo, &opt, sum, seq)
}

// runAndWrite runs todo and writes their rows as parts numbered from seq.
// NB: which points a part holds is fixed before anything runs (consecutive
// runs of PartRows points in the order they are handed out), and a part is
// written once all its points are done, so the same grid and folder give
// byte-identical parts whatever the workers' timing.
func runAndWrite(ctx context.Context, todo []Point, opt *Options, sum *Summary, seq int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	groups := newTraceGroups(todo, opt.NewInputs)
	plan := newPartPlan(groups.order, opt.PartRows, opt.Workers)
	rows := runPoints(ctx, groups, plan, opt, sum)
	w := partWriter{dir: opt.Out, opt: opt, seq: seq, sum: sum, plan: plan, pending: map[int][]Row{}}
	for r := range rows {
		if err := w.add(r); err != nil {
			cancel()
			for range rows { // let the started points finish
			}
			return err
		}
	}
	if err := w.flushRest(); err != nil {
		return err
	}
	return ctx.Err()
}

// partPlan says which part each point's row goes to, and holds back the
// points of parts too far ahead of the first part not yet written, so the
// rows waiting for a slow point stay few (about PartRows + Workers).
type partPlan struct {
	part    map[int]int   // point index → part, counting from 0
	size    []int         // points per part
	window  int           // parts that may run at once
	credits chan struct{} // one per part written
}

func newPartPlan(order []Point, rows, workers int) *partPlan {
	p := &partPlan{part: map[int]int{}}
	for i, pt := range order {
		k := i / rows
		if k == len(p.size) {
			p.size = append(p.size, 0)
		}
		p.size[k]++
		p.part[pt.Index] = k
	}
	p.window = 1 + (workers+rows-1)/rows
	p.credits = make(chan struct{}, len(p.size))
	return p
}

// dispatch sends order's points to jobs, waiting before a point whose part
// is beyond the window, until ctx is done; it closes jobs.
func (p *partPlan) dispatch(ctx context.Context, order []Point, jobs chan<- Point) {
	defer close(jobs)
	open := p.window
	for _, pt := range order {
		for p.part[pt.Index] >= open {
			select {
			case <-p.credits:
				open++
			case <-ctx.Done():
				return
			}
		}
		select {
		case jobs <- pt:
		case <-ctx.Done():
			return
		}
	}
}

// runPoints runs groups.order on opt.Workers goroutines and returns their
// rows; the channel closes when every started point has finished. Points
// sharing a trace share one experiment.Inputs (the trace is loaded once) and
// run next to each other; the Inputs is dropped after its last point, so
// memory holds about one trace per worker, whatever the grid's order.
func runPoints(ctx context.Context, groups *traceGroups, plan *partPlan, opt *Options, sum *Summary) <-chan Row {
	jobs := make(chan Point)
	rows := make(chan Row, opt.Workers)
	var wg sync.WaitGroup
	for range min(opt.Workers, max(len(groups.order), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				in := groups.acquire(p)
				rows <- runPoint(ctx, in, p, opt, sum)
				groups.release(p)
			}
		}()
	}
	go plan.dispatch(ctx, groups.order, jobs)
	go func() {
		wg.Wait()
		close(rows)
	}()
	return rows
}

// traceGroups hands out one experiment.Inputs per trace, counting the
// points still to run so it can drop the Inputs (and its trace) after the last.
type traceGroups struct {
	order []Point // todo, grouped by trace in order of first appearance
	key   map[int]string
	mu    sync.Mutex
	live  map[string]*traceGroup
}

type traceGroup struct {
	in   *experiment.Inputs
	left int
}

func newTraceGroups(todo []Point, newInputs func() *experiment.Inputs) *traceGroups {
	if newInputs == nil {
		newInputs = func() *experiment.Inputs { return &experiment.Inputs{} }
	}
	g := &traceGroups{key: map[int]string{}, live: map[string]*traceGroup{}}
	var keys []string
	byKey := map[string][]Point{}
	for _, p := range todo {
		k := traceKey(&p.Spec)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
			g.live[k] = &traceGroup{in: newInputs()}
		}
		byKey[k] = append(byKey[k], p)
		g.key[p.Index] = k
		g.live[k].left++
	}
	for _, k := range keys {
		g.order = append(g.order, byKey[k]...)
	}
	return g
}

// traceKey names the trace a spec runs on: its model and trace groups (a
// stated predictor's scores derive from that trace, inside the Inputs).
func traceKey(s *experiment.Spec) string {
	js, _ := json.Marshal(struct {
		M any `json:"m"`
		T any `json:"t"`
	}{s.Model, s.Trace})
	return string(js)
}

func (g *traceGroups) acquire(p Point) *experiment.Inputs {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live[g.key[p.Index]].in
}

func (g *traceGroups) release(p Point) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.key[p.Index]
	if tg := g.live[k]; tg != nil {
		if tg.left--; tg.left == 0 {
			delete(g.live, k)
		}
	}
}

// runPoint runs one point into its row.
func runPoint(ctx context.Context, in *experiment.Inputs, p Point, opt *Options, sum *Summary) Row {
	row := Row{PointID: p.ID, PointIndex: p.Index, SweepID: sum.SweepID, LessimVersion: opt.Version, Spec: p.Spec}
	out, err := runSafely(ctx, opt.Run, in, p.Spec)
	if err != nil {
		row.Error = oneLine(err)
		return row
	}
	row.Spec, row.RunHash, row.Result = out.Spec, out.Hash, out.Result
	return row
}

// runSafely calls run, turning a panic into an error so one bad point does
// not end the sweep.
func runSafely(ctx context.Context, run RunFunc, in *experiment.Inputs, s experiment.Spec) (out *experiment.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	out, err = run(ctx, in, s)
	if err == nil && (out == nil || out.Result == nil) {
		err = errors.New("run returned no result")
	}
	return out, err
}

// partWriter writes rows into the parts of its plan, in part order.
type partWriter struct {
	dir     string
	opt     *Options
	seq     int
	sum     *Summary
	plan    *partPlan
	pending map[int][]Row // rows of parts not written yet
	next    int           // the first part not written
}

// add keeps a row and writes every part that is then complete, in order.
func (w *partWriter) add(r Row) error {
	w.sum.Ran++
	if r.Error != "" {
		w.sum.failed(r.PointIndex, r.Error)
	}
	if w.opt.Progress != nil {
		w.opt.Progress(w.sum.Skipped+w.sum.Ran, w.sum.Mine)
	}
	k := w.plan.part[r.PointIndex]
	w.pending[k] = append(w.pending[k], r)
	for w.next < len(w.plan.size) && len(w.pending[w.next]) == w.plan.size[w.next] {
		if err := w.write(w.pending[w.next]); err != nil {
			return err
		}
		delete(w.pending, w.next)
		w.next++
		w.plan.credits <- struct{}{}
	}
	return nil
}

// flushRest writes the rows of parts left incomplete (a cancelled run), in
// part order, so no finished point is lost.
func (w *partWriter) flushRest() error {
	for _, k := range slices.Sorted(maps.Keys(w.pending)) {
		if err := w.write(w.pending[k]); err != nil {
			return err
		}
		delete(w.pending, k)
	}
	return nil
}

// write writes rows, sorted by point index, as the next part.
func (w *partWriter) write(rows []Row) error {
	slices.SortFunc(rows, func(a, b Row) int { return a.PointIndex - b.PointIndex })
	data, err := encodePart(w.sum.SweepID, rows)
	if err != nil {
		return err
	}
	path := filepath.Join(w.dir, partName(w.opt.Shard, w.opt.Shards, w.seq))
	if err := atomicfile.WriteFile(path, data); err != nil {
		return err
	}
	w.seq++
	w.sum.Parts = append(w.sum.Parts, path)
	return nil
}
