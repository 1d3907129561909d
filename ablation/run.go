package ablation

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/lessim/lessim/experiment"
)

// Row is one step of a run ablation.
type Row struct {
	Step Step
	// Order is the step's position (1-based) in Steps; reference rows come last.
	Order int
	// Skipped says why the step was not run ("" = it ran; then Outcome is set).
	Skipped string
	// Prev is the index in Rows of the step this one builds on (-1 for the first).
	Prev int
	// Changes are the differences of this step's resolved spec from Prev's:
	// exactly what the step changed.
	Changes []Difference
	// Leaves are this step's resolved spec, flattened (see Leaves).
	Leaves []Leaf
	// Outcome is the run: resolved spec, hash, result.
	Outcome *experiment.Outcome
	// VsPrevious and VsBaseline are tokens/s over Prev's and the first
	// step's (0 when there is no such comparison: the first step's VsPrevious,
	// the oracle row's VsPrevious, a skipped step). A leave-one-out row's
	// Prev is the last step.
	VsPrevious, VsBaseline float64
}

// Ablation is a run ablation: its settings and one row per step.
type Ablation struct {
	Settings Settings
	Rows     []Row
}

// Run builds the steps of s (Build), resolves each through in, so steps
// sharing a trace load or generate it once, and runs them in parallel. Rows
// are in step order whatever order the runs finish in. A step that fails to
// resolve or run fails the ablation, with the step named, except a step
// whose re-quantization the run's model cannot take (experiment's
// ExpertQuantError: a trace's model that does not state its experts' shape,
// experts of that type already): it is skipped with the reason, and the
// steps after it build on the one before.
func Run(in *experiment.Inputs, s Settings) (*Ablation, error) {
	resolved := map[int]*experiment.Plan{}
	built, err := build(s, func(i int, b Built) (string, error) {
		p, err := in.Resolve(b.Spec)
		if why := cannotRequantize(b.Step, err); why != "" {
			return why, nil
		}
		if err != nil {
			return "", fmt.Errorf("step %d (%s): %w", i+1, b.Step.Key, err)
		}
		resolved[i] = p
		return "", nil
	})
	if err != nil {
		return nil, err
	}
	rows := make([]Row, len(built))
	plans := make([]*experiment.Plan, len(built))
	for i, b := range built {
		rows[i] = Row{Step: b.Step, Order: i + 1, Skipped: b.Skipped, Prev: b.Prev}
		plans[i] = resolved[i]
	}
	if err := runAll(plans, rows); err != nil {
		return nil, err
	}
	for i := range rows {
		if err := compare(rows, i); err != nil {
			return nil, err
		}
	}
	return &Ablation{Settings: s, Rows: rows}, nil
}

// cannotRequantize is why step st is skipped when resolving it failed with
// err because the run's model cannot be re-quantized as the step asks (a
// trace's model that does not state its experts' shape, experts that have
// the type already); "" otherwise.
func cannotRequantize(st Step, err error) string {
	var qe *experiment.ExpertQuantError
	if !errors.As(err, &qe) {
		return ""
	}
	for _, c := range st.Changes {
		if c.Option == "expert-quant" {
			return qe.Error()
		}
	}
	return ""
}

// runAll runs every plan on up to GOMAXPROCS goroutines, storing each
// outcome in its row.
func runAll(plans []*experiment.Plan, rows []Row) error {
	errs := make([]error, len(plans))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(plans)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				rows[i].Outcome, errs[i] = plans[i].Run()
			}
		}()
	}
	for i, p := range plans {
		if p != nil {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, rows[i].Step.Key, err)
		}
	}
	return nil
}

// compare fills row i's leaves, changes and speedups.
func compare(rows []Row, i int) error {
	r := &rows[i]
	if r.Outcome == nil {
		return nil
	}
	var err error
	if r.Leaves, err = Leaves(r.Outcome.Spec); err != nil {
		return err
	}
	tps := r.Outcome.Result.TokensPerSec
	if r.Prev >= 0 {
		p := &rows[r.Prev]
		r.Changes = Diff(p.Leaves, r.Leaves)
		if !r.Step.Reference || r.Step.Without != "" || r.Step.Of != "" {
			r.VsPrevious = ratio(tps, p.Outcome.Result.TokensPerSec)
		}
	}
	r.VsBaseline = ratio(tps, rows[0].Outcome.Result.TokensPerSec)
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
