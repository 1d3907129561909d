//go:build llamacpp && linux

package live

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runtime/record"
)

// TestSpeculativeReplayMatchesLive: a speculative trace recorded with a
// drafter (every verify pass, rejected drafts included), replayed with lru
// and its prompt, makes exactly the hits and misses of the live run with the
// same drafter: the live engine verifies the same blocks through the same
// books, and the replay loads the rejected drafts' experts as recorded.
func TestSpeculativeReplayMatchesLive(t *testing.T) {
	dir := diskDir(t)
	path := tinyModel(t, dir)
	cache := cacheFraction(t, path, 0.3)
	for i, sp := range []record.Speculative{
		{Block: 4, Drafter: record.DrafterControlled, Accept: 0.6, Seed: 5},
		{Block: 3, Drafter: record.DrafterNgram},
	} {
		ro := record.DefaultOptions()
		ro.ModelPath, ro.Prompts, ro.Tokens, ro.Temperature, ro.Spec = path, []string{DefaultPrompt}, 16, 0, &sp
		ro.Out = filepath.Join(dir, "trace"+strconv.Itoa(i)+".parquet")
		sum, err := record.Record(context.Background(), ro)
		if err != nil {
			t.Fatal(err)
		}
		opt := DefaultOptions()
		opt.Model, opt.Policy, opt.Cache, opt.Tokens, opt.Spec = path, "lru", cache, 16, &sp
		res, _, err := Run(context.Background(), opt)
		if err != nil {
			t.Fatal(err)
		}
		s, err := experiment.FromOptions(map[string]string{"trace": ro.Out, "policy": "lru", "spec-from-trace": "true", "prefill": "true",
			"cache": strconv.FormatInt(cache, 10) + "B"})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := new(experiment.Inputs).Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		out, err := plan.Run()
		if err != nil {
			t.Fatal(err)
		}
		r := out.Result
		if res.Tokens != 16 || res.Passes != int64(sum.DecodePasses) || res.RejectedDrafts != int64(sum.RejectedDrafts) {
			t.Errorf("%+v: live %d tokens in %d passes, %d rejected; recorded %d passes, %d rejected", sp, res.Tokens, res.Passes, res.RejectedDrafts, sum.DecodePasses, sum.RejectedDrafts)
		}
		if r.Tokens != res.Tokens || r.Passes != res.Passes || r.RejectedDrafts != res.RejectedDrafts || r.Uses != res.Uses || r.Hits != res.Hits || r.Misses != res.Misses {
			t.Errorf("%+v: replay tokens %d passes %d rejected %d uses %d hits %d misses %d; live %d %d %d %d %d %d", sp,
				r.Tokens, r.Passes, r.RejectedDrafts, r.Uses, r.Hits, r.Misses, res.Tokens, res.Passes, res.RejectedDrafts, res.Uses, res.Hits, res.Misses)
		}
		if sp.Drafter == record.DrafterControlled && (res.RejectedDrafts == 0 || res.Passes >= 16) {
			t.Errorf("%+v: %d rejected drafts in %d passes: want some of each", sp, res.RejectedDrafts, res.Passes)
		}
		t.Logf("%+v: %d passes, %d rejected drafts, hits %d misses %d, draft time %d ns", sp, res.Passes, res.RejectedDrafts, res.Hits, res.Misses, res.DraftNS)
	}
}
