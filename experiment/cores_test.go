package experiment

import "testing"

// TestCoresEveryLoadLands: with cores stated, compute advances the flash
// (it contends with the lanes), so a load can land while a layer computes
// its resident experts; the layer must still find it. It ended in
// "internal: 1 experts of layer 39 never became resident" before.
func TestCoresEveryLoadLands(t *testing.T) {
	d, err := LoadDevice("iphone-17-pro-max", "")
	if err != nil {
		t.Fatal(err)
	}
	c := *d
	c.Name, c.Cores = "cores-test", 2
	s := DefaultSpec()
	s.Device = Device{Profile: &c}
	s.Trace.Synthetic.Tokens = 40
	s.Cache = Cache{Size: "3GiB"}
	out, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Tokens != 40 {
		t.Errorf("decoded %d tokens, want 40", out.Result.Tokens)
	}
}
