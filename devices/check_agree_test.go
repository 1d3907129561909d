package devices

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestCheckAgreesWithProfile: Device.Check (the inline profile of a spec)
// and Profile.Device (a profile file) repeat the rules between numbers
// (reserve below RAM, app limit within RAM, runtime with an app limit, the
// backend's sync cost, the thermal pair). Over random profiles whose every
// number is within its bound, some unstated, the backend gpu, cpu or
// unstated, the two must agree on whether the device is valid: a rule added
// to one and not the other fails here.
func TestCheckAgreesWithProfile(t *testing.T) {
	base, err := ParseProfile(boundsProfile(nil), "agree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var valid, invalid int
	for i := range 4000 {
		p := base.Clone()
		randomise(rng, p)
		d, ps := p.resolve()
		errs := d.Check()
		if (len(ps) == 0) != (len(errs) == 0) {
			y, _ := p.YAML()
			t.Fatalf("profile %d: Profile.Device finds %v, Device.Check finds %v\n%s", i, ps, errs, y)
		}
		if len(ps) == 0 {
			valid++
		} else {
			invalid++
		}
	}
	// NB: both kinds must occur, or the test proves nothing.
	if valid < 100 || invalid < 100 {
		t.Fatalf("%d valid and %d invalid profiles: the mutations miss one side", valid, invalid)
	}
}

// randomise sets about a third of p's numbers to an end of their bound
// (or, if optional, leaves them unstated) and the backend at random.
func randomise(rng *rand.Rand, p *Profile) {
	for _, f := range p.fields() {
		if rng.IntN(3) != 0 {
			continue
		}
		lo, hi := bound(f.path).Range()
		switch rng.IntN(3) {
		case 0:
			f.q.Set(withUnit(strconv.FormatFloat(lo, 'f', -1, 64), f.kind), "assumed: test")
		case 1:
			f.q.Set(withUnit(strconv.FormatFloat(hi, 'f', -1, 64), f.kind), "assumed: test")
		default:
			if f.optional {
				*f.q = Quantity{}
			}
		}
	}
	switch rng.IntN(3) {
	case 0:
		p.Backend.Set(BackendCPU, "assumed: test")
	case 1:
		p.Backend.Set(BackendGPU, "assumed: test")
	default:
		p.Backend = Quantity{}
	}
}
