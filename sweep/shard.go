package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lessim/lessim/internal/plural"
)

// JobIndexEnv is the variable Kubernetes Indexed Jobs set to the pod's
// index, which selects the shard with a shard count.
const JobIndexEnv = "JOB_COMPLETION_INDEX"

// ParseShard resolves the shard to run: flag "i/n" (shards, when not 0,
// must agree), or jobIndex (the JobIndexEnv value) with shards n; with
// neither, the one shard 0/1.
func ParseShard(flag string, shards int, jobIndex string) (shard, n int, err error) {
	if flag != "" {
		is, ns, ok := strings.Cut(flag, "/")
		i, err1 := strconv.Atoi(is)
		n, err2 := strconv.Atoi(ns)
		if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
			return 0, 0, fmt.Errorf("--shard %q: want i/n with 0 <= i < n (the index counts from 0, like %s)", flag, JobIndexEnv)
		}
		if shards != 0 && shards != n {
			return 0, 0, fmt.Errorf("--shard %s and --shards %d disagree", flag, shards)
		}
		return i, n, nil
	}
	if jobIndex != "" {
		i, err := strconv.Atoi(jobIndex)
		if err != nil || i < 0 {
			return 0, 0, fmt.Errorf("%s=%q: not a shard index", JobIndexEnv, jobIndex)
		}
		if shards < 1 {
			return 0, 0, fmt.Errorf("%s=%s is set: give --shards N (the Job's completions) to shard by it", JobIndexEnv, jobIndex)
		}
		if i >= shards {
			return 0, 0, fmt.Errorf("%s=%d is not below --shards %d", JobIndexEnv, i, shards)
		}
		return i, shards, nil
	}
	if shards > 1 {
		return 0, 0, fmt.Errorf("--shards %d needs a shard index: --shard i/%d or %s", shards, shards, JobIndexEnv)
	}
	return 0, 1, nil
}

// WriteList writes each point of shard i of n as a table row: its index,
// id prefix and axis values ("-" where a value does not apply).
func WriteList(w io.Writer, g *Grid, points []Point, shard, shards int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "POINT\tID")
	for _, ax := range g.Axes {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(ax.Field))
	}
	fmt.Fprintln(tw)
	mine := ShardPoints(points, shard, shards)
	for _, p := range mine {
		fmt.Fprintf(tw, "%d\t%s", p.Index, p.ID[:12])
		for _, v := range p.Values {
			s := "-"
			if v != nil {
				js, _ := json.Marshal(v)
				s = strings.Trim(string(js), `"`)
			}
			fmt.Fprintf(tw, "\t%s", s)
		}
		fmt.Fprintln(tw)
	}
	all := plural.Count(len(points), "point")
	if shards > 1 {
		fmt.Fprintf(tw, "%d of %s in shard %d/%d (sweep %s)\n", len(mine), all, shard, shards, SweepID(points))
	} else {
		fmt.Fprintf(tw, "%s (sweep %s)\n", all, SweepID(points))
	}
	return tw.Flush()
}

// WriteText writes what a run of grid g (read from file config) into the
// results folder out did.
func (s *Summary) WriteText(w io.Writer, g *Grid, config, out string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "grid\t%s: %s, %s (sweep %s)\n", config, plural.CountAs(len(g.Axes), "axis", "axes"), plural.Count(s.Points, "point"), s.SweepID)
	fmt.Fprintf(tw, "shard\t%s: %s, %d finished before, %d run now, %d failed\n", s.Shard, plural.Count(s.Mine, "point"), s.Skipped, s.Ran, s.Failed)
	fmt.Fprintf(tw, "results\t%s (%s written now; %s, %s)\n", out, plural.Count(len(s.Parts), "part"), ManifestFile, ConfigFile)
	return tw.Flush()
}

// Err is the error naming the shard's failed points, or nil.
func (s *Summary) Err() error {
	if s.Failed == 0 {
		return nil
	}
	before := ""
	if s.FailedBefore > 0 {
		before = fmt.Sprintf("; not retried: %s failed in an earlier run; to run them again, delete the %s holding them (%s) and rerun",
			plural.Count(s.FailedBefore, "point"), plural.Word(len(s.FailedParts), "part", "parts"), strings.Join(s.FailedParts, ", "))
	}
	more := ""
	if n := s.Failed - len(s.Errors); n > 0 {
		more = fmt.Sprintf("\n  and %s more", plural.Count(n, "point"))
	}
	return fmt.Errorf("%d of %s failed (their rows carry the reason in the error column%s):\n  %s%s",
		s.Failed, plural.Count(s.Mine, "point"), before, strings.Join(s.Errors, "\n  "), more)
}
