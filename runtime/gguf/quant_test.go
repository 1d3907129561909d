package gguf

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkQ8Error asserts the Q8_0 reconstruction bound: per block of 32 with
// d = max|x|/127, |x − x̂| ≤ d/2 (rounding of x/d) + 127·δ, where δ ≤ max(d·2⁻¹¹, 2⁻²⁵)
// is the fp16 rounding error of d (absolute below 2⁻¹⁴, where halves are subnormal).
func checkQ8Error(t *testing.T, xs, got []float32) {
	t.Helper()
	if len(got) != len(xs) {
		t.Fatalf("got %d values, want %d", len(got), len(xs))
	}
	for b := 0; b < len(xs); b += q8Block {
		var amax float64
		for _, v := range xs[b : b+q8Block] {
			amax = max(amax, math.Abs(float64(v)))
		}
		d := amax / 127
		bound := d/2 + 127*max(d/2048, math.Ldexp(1, -25)) + 1e-12
		for i := b; i < b+q8Block; i++ {
			if e := math.Abs(float64(got[i] - xs[i])); e > bound {
				t.Errorf("value %d: %v decoded as %v, error %g > bound %g", i, xs[i], got[i], e, bound)
			}
		}
	}
}

func TestQ8_0Bound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := make([]float32, 32*64)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * math.Pow(10, float64(i/32%8-4)))
	}
	copy(xs[:32], make([]float32, 32)) // an all-zero block has d = 0
	p, err := AppendQ8_0(nil, xs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != len(xs)/32*34 {
		t.Fatalf("%d bytes, want %d", len(p), len(xs)/32*34)
	}
	got := make([]float32, len(xs))
	if err := decode(got, TypeQ8_0, p); err != nil {
		t.Fatal(err)
	}
	checkQ8Error(t, xs, got)
	if _, err := AppendQ8_0(nil, xs[:31]); err == nil {
		t.Error("31 values: no error")
	}
}

// TestQ8_0Reference pins one block against hand-computed ggml output: amax 127 gives
// d = 1 (fp16 0x3C00) and quants equal to the rounded inputs (halves away from zero).
func TestQ8_0Reference(t *testing.T) {
	xs := make([]float32, 32)
	xs[0], xs[1], xs[2], xs[3], xs[4] = 127, -127, 2.5, -2.5, 0.49
	p, err := AppendQ8_0(nil, xs)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x00, 0x3c, 127, 0x81, 3, 0xfd, 0}
	for i, b := range want {
		if p[i] != b {
			t.Errorf("byte %d = %#x, want %#x", i, p[i], b)
		}
	}
}

// TestF16 converts every half to float32 and back, and checks rounding at midpoints.
func TestF16(t *testing.T) {
	for h := range 1 << 16 {
		x := F16ToF32(uint16(h))
		if x != x { // NaN
			if back := F32ToF16(x); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Errorf("NaN %#04x → %#04x", h, back)
			}
			continue
		}
		if back := F32ToF16(x); back != uint16(h) {
			t.Fatalf("%#04x → %v → %#04x", h, x, back)
		}
	}
	tests := []struct {
		x    float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00},                    // rounds up to +Inf
		{1e10, 0x7c00},                     // overflow
		{1 + 1.0/2048, 0x3c00},             // midpoint rounds to even (down)
		{1 + 3.0/2048, 0x3c02},             // midpoint rounds to even (up)
		{float32(math.Ldexp(1, -24)), 1},   // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0},   // half of it rounds to even (zero)
		{float32(math.Ldexp(1.5, -25)), 1}, // above the midpoint
		{float32(math.Ldexp(1, -30)), 0},   // underflow
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, tt := range tests {
		if got := F32ToF16(tt.x); got != tt.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", tt.x, got, tt.want)
		}
	}
}

func TestTypeTable(t *testing.T) {
	// Every type the devices package sizes must agree with this table.
	for id, g := range ggmlTypes {
		n := g.BlockWeights * 4
		want, err := id.bytesFor(n)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := g.Name.TensorBytes(n); err == nil && got != want {
			t.Errorf("%s: devices says %d bytes per %d weights, ggml table %d", g.Name, got, n, want)
		}
		if back, err := TypeByName(string(g.Name)); err != nil || back != id {
			t.Errorf("TypeByName(%s) = %d, %v; want %d", g.Name, back, err, id)
		}
	}
	if _, err := TypeByName("Q4_2"); err == nil {
		t.Error("TypeByName(Q4_2): no error")
	}
	if TypeID(4).Known() || TypeID(4).Name() != "type(4)" {
		t.Error("type 4 (removed Q4_2) is known")
	}
}

// TestQ8_0AgainstDumb cross-checks AppendQ8_0 against a literal transcription of
// ggml's quantize_row_q8_0_ref (math.Round is C's roundf), including values exactly
// halfway between quants and just below one half.
func TestQ8_0AgainstDumb(t *testing.T) {
	dumb := func(xs []float32) []byte {
		var out []byte
		for b := 0; b < len(xs); b += 32 {
			var amax float32
			for _, v := range xs[b : b+32] {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			d := amax / 127
			var id float32
			if d != 0 {
				id = 1 / d
			}
			h := F32ToF16(d)
			out = append(out, byte(h), byte(h>>8))
			for _, v := range xs[b : b+32] {
				out = append(out, byte(int8(math.Round(float64(v*id)))))
			}
		}
		return out
	}
	r := rand.New(rand.NewPCG(5, 6))
	xs := make([]float32, 32*512)
	for i := range xs {
		switch i % 32 {
		case 0:
			xs[i] = 127 // d = 1: the next values are exact quants and halves
		case 1:
			xs[i] = float32(r.IntN(254)-127) + 0.5
		case 2:
			xs[i] = 0.49999997
		case 3:
			xs[i] = -0.49999997
		default:
			xs[i] = float32(r.NormFloat64())
		}
		if i/32%2 == 1 {
			xs[i] = float32(r.NormFloat64() * 0.01)
		}
	}
	got, err := AppendQ8_0([]byte{9}, xs)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte{9}, dumb(xs)...)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("byte %d: %d, reference %d", i, got[i], want[i])
		}
	}
}
