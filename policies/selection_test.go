package policies

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/lessim/lessim/traces"
)

// topByFullSort is the obvious reference for topIndices.
func topByFullSort(scores []float32, n int) []int32 {
	var idx []int32
	for i, v := range scores {
		if v == v && !math.IsInf(float64(v), -1) {
			idx = append(idx, int32(i))
		}
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(scores[b], scores[a]) })
	return idx[:min(n, len(idx))]
}

func TestTopIndices(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		scores []float32
		n      int
		want   []int32
	}{
		{[]float32{1, 5, 3, 4}, 2, []int32{1, 3}},
		{[]float32{1, 5, 3, 4}, 9, []int32{1, 3, 2, 0}},
		{[]float32{2, 2, 2}, 2, []int32{0, 1}},
		{[]float32{nan, 1, nan, 0}, 3, []int32{1, 3}},
		{[]float32{-inf, inf, 0}, 3, []int32{1, 2}},
		{nil, 3, nil},
		{[]float32{1}, 0, nil},
	}
	for _, tc := range cases {
		got := traces.TopIndices([]int32{99}, tc.scores, tc.n)
		if got[0] != 99 || !slices.Equal(got[1:], tc.want) {
			t.Errorf("traces.TopIndices(%v, %d) = %v, want [99] + %v", tc.scores, tc.n, got, tc.want)
		}
	}
}

// FuzzTopIndices checks the partial selection against a full sort.
func FuzzTopIndices(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint8(2))
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0xff, 0, 0, 0x80, 0x3f}, uint8(3)) // NaN, -Inf, 1
	f.Fuzz(func(t *testing.T, raw []byte, n uint8) {
		scores := make([]float32, len(raw)/4)
		for i := range scores {
			scores[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		got := traces.TopIndices(nil, scores, int(n))
		if want := topByFullSort(scores, int(n)); !slices.Equal(got, want) {
			t.Fatalf("traces.TopIndices(%v, %d) = %v, want %v", scores, n, got, want)
		}
	})
}
