package policies

import "math/bits"

// levelBits is a set of integers in [0, n) as a bitset with summary levels
// (a van Emde Boas-style tree of 64-bit words): level 0 has one bit per
// integer, each higher level one bit per non-empty word of the level below.
// Set and clear touch one word per level at most; prev (the largest member
// at or below i) takes O(levels) word operations, about 4 for 2^24 members.
type levelBits struct {
	lv [][]uint64 // lv[0] is the finest level; the last has one word
}

func newLevelBits(n int) levelBits {
	var b levelBits
	for {
		words := max((n+63)/64, 1)
		b.lv = append(b.lv, make([]uint64, words))
		if words == 1 {
			return b
		}
		n = words
	}
}

// set adds i.
func (b *levelBits) set(i int) {
	for _, w := range b.lv {
		j := i >> 6
		old := w[j]
		w[j] = old | 1<<(i&63)
		if old != 0 {
			return
		}
		i = j
	}
}

// clear removes i.
func (b *levelBits) clear(i int) {
	for _, w := range b.lv {
		j := i >> 6
		w[j] &^= 1 << (i & 63)
		if w[j] != 0 {
			return
		}
		i = j
	}
}

// prev is the largest member <= i, or -1 when there is none.
func (b *levelBits) prev(i int) int {
	l := 0
	for {
		if i < 0 {
			return -1
		}
		j := i >> 6
		// NB: for i&63 == 63 the shift wraps to 0 and the mask is all ones.
		if m := b.lv[l][j] & (2<<(i&63) - 1); m != 0 {
			i = j<<6 | (63 - bits.LeadingZeros64(m))
			break
		}
		if l == len(b.lv)-1 {
			return -1
		}
		i = j - 1
		l++
	}
	for l > 0 {
		l--
		i = i<<6 | (63 - bits.LeadingZeros64(b.lv[l][i]))
	}
	return i
}

// next is the smallest member >= i, or -1 when there is none.
func (b *levelBits) next(i int) int {
	l := 0
	for {
		j := i >> 6
		if j >= len(b.lv[l]) {
			return -1
		}
		if m := b.lv[l][j] &^ (1<<(i&63) - 1); m != 0 {
			i = j<<6 | bits.TrailingZeros64(m)
			break
		}
		if l == len(b.lv)-1 {
			return -1
		}
		i = j + 1
		l++
	}
	for l > 0 {
		l--
		i = i<<6 | bits.TrailingZeros64(b.lv[l][i])
	}
	return i
}

// first is the smallest member, or -1 when there is none: next(0) from the
// top level down, without climbing from the bottom.
func (b *levelBits) first() int {
	top := len(b.lv) - 1
	if b.lv[top][0] == 0 {
		return -1
	}
	i := 0
	for l := top; l >= 0; l-- {
		i = i<<6 | bits.TrailingZeros64(b.lv[l][i])
	}
	return i
}

// last is the largest member, or -1 when there is none: prev(n-1) from the
// top level down, without climbing from the bottom.
func (b *levelBits) last() int {
	top := len(b.lv) - 1
	if b.lv[top][0] == 0 {
		return -1
	}
	i := 0
	for l := top; l >= 0; l-- {
		i = i<<6 | (63 - bits.LeadingZeros64(b.lv[l][i]))
	}
	return i
}
