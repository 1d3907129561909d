package policies

import (
	"math/rand/v2"
	"testing"
)

// TestLevelBitsAgainstMap checks set, clear, prev, next, first and last against a plain
// set on random operations over sizes that need one to four levels.
func TestLevelBitsAgainstMap(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 4096, 4097, 300_000} {
		r := rand.New(rand.NewPCG(uint64(n), 7))
		b := newLevelBits(n)
		in := make([]bool, n)
		for range 4000 {
			i := r.IntN(n)
			if r.IntN(3) == 0 {
				b.clear(i)
				in[i] = false
			} else {
				b.set(i)
				in[i] = true
			}
			q := r.IntN(n)
			want := -1
			for j := q; j >= 0; j-- {
				if in[j] {
					want = j
					break
				}
			}
			if got := b.prev(q); got != want {
				t.Fatalf("n=%d prev(%d) = %d, want %d", n, q, got, want)
			}
			want = -1
			for j := q; j < n; j++ {
				if in[j] {
					want = j
					break
				}
			}
			if got := b.next(q); got != want {
				t.Fatalf("n=%d next(%d) = %d, want %d", n, q, got, want)
			}
			if got, want := b.first(), b.next(0); got != want {
				t.Fatalf("n=%d first() = %d, want next(0) = %d", n, got, want)
			}
			if got, want := b.last(), b.prev(n-1); got != want {
				t.Fatalf("n=%d last() = %d, want prev(n-1) = %d", n, got, want)
			}
		}
	}
}
