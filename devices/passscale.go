package devices

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// passScalePath is the profile field of the verify-pass curve; one token
// count's entry is passScalePath + "." + the count.
const passScalePath = "compute.pass_scale"

// PassScale is what one token of an n-token pass costs in FLOP time,
// relative to a one-token pass's (the part's FLOPs × n × PassScale(n) ÷
// ComputeFLOPS): 1 for n ≤ 1 or with no table; between two stated counts
// (and between one token's 1 and the first) linear in n; past the largest
// stated count, that count's scale.
func (d *Device) PassScale(n int) float64 {
	if n <= 1 || len(d.PassScaleByTokens) == 0 {
		return 1
	}
	n0, s0 := 1, 1.0
	for _, k := range slices.Sorted(maps.Keys(d.PassScaleByTokens)) {
		s := d.PassScaleByTokens[k]
		if n <= k {
			return s0 + (s-s0)*float64(n-n0)/float64(k-n0)
		}
		n0, s0 = k, s
	}
	return s0
}

// passScale checks and parses the optional compute.pass_scale table: each
// key a whole token count from 2 to maxPassTokens written plainly, each
// value a sourced number within compute.pass_scale's bound. It returns the
// table (nil when absent) and appends the assumed entries' paths.
func (ps *problems) passScale(p *Profile, assumed *[]string) map[int]float64 {
	if len(p.Compute.PassScale) == 0 {
		return nil
	}
	out := map[int]float64{}
	for _, k := range slices.Sorted(maps.Keys(p.Compute.PassScale)) {
		q := p.Compute.PassScale[k]
		path := passScalePath + "." + k
		n, err := strconv.Atoi(k)
		if err != nil || n < 2 || n > maxPassTokens || strconv.Itoa(n) != k {
			ps.add(path, "the key must be a whole number of tokens per pass from 2 to %d", maxPassTokens)
			continue
		}
		v, ok := ps.quantity(field{path, Dimensionless, &q, false})
		if !ok {
			continue
		}
		if msg := bound(passScalePath).check(v, q.Value); msg != "" {
			ps.add(path, "%s", msg)
			continue
		}
		out[n] = v
		if IsAssumed(q.Source) {
			*assumed = append(*assumed, path)
		}
	}
	return out
}

// maxPassTokens is the largest token count compute.pass_scale may state:
// a long prompt's prefill pass.
const maxPassTokens = 1 << 16

// checkPassScale checks a resolved device's table as Profile.Device does.
func (d *Device) checkPassScale(ps *problems) {
	checkTable(ps, "pass_scale", d.PassScaleByTokens, bound(passScalePath), func(n int) string {
		if n < 2 || n > maxPassTokens {
			return fmt.Sprintf("the key must be a whole number of tokens per pass from 2 to %d", maxPassTokens)
		}
		return ""
	})
}

// checkTable checks a resolved device's keyed table at name: each key by
// badKey (a reason, or "" when it is fine), each value by b.
func checkTable[K cmp.Ordered](ps *problems, name string, m map[K]float64, b Bound, badKey func(K) string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		path := fmt.Sprintf("%s.%v", name, k)
		if why := badKey(k); why != "" {
			ps.add(path, "%s", why)
			continue
		}
		if msg := b.check(m[k], fmt.Sprint(m[k])); msg != "" {
			ps.add(path, "%s", msg)
		}
	}
}

// isPassScaleName reports whether an Assumed name is one token count's
// pass scale.
func isPassScaleName(name string) bool {
	k, ok := strings.CutPrefix(name, passScalePath+".")
	n, err := strconv.Atoi(k)
	return ok && err == nil && n >= 2 && n <= maxPassTokens
}

// byNumber orders token-count keys by their number (a key that is none
// sorts after the numbers, by its text).
func byNumber(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil:
		return x - y
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}
