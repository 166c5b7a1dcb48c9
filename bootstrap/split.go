package bootstrap

import (
	"io"
	"math/rand/v2"
)

// Splitter draws random halvings of a group of n units, as a split-half comparison needs (the humans' own
// distance between two random halves of their respondents). Split b (0-based) is the b-th draw of a PCG
// stream seeded with (seed, FNV-1a 64 of "split", a NUL byte and the key): a Fisher–Yates shuffle of 0 … n−1 by
// IntN, whose first ⌊n/2⌋ units form the first half. So split b is fixed by (seed, key, n, b), and a key's
// splits never share a stream with its resamples.
type Splitter struct {
	r *rand.Rand
	n int
}

// NewSplitter returns the Splitter of the group named key (see Key) with n units under seed.
func NewSplitter(seed int64, key string, n int) *Splitter {
	return &Splitter{r: stream(seed, Key("split", key)), n: n}
}

// Next draws the next split into first (length N, overwritten): first[i] says whether unit i is in the first
// half, which holds ⌊n/2⌋ units (with n odd, the second half has the unit more).
func (s *Splitter) Next(first []bool) {
	if len(first) != s.n {
		panic("bootstrap: Splitter.Next with a slice of another length than the group")
	}
	perm := make([]int, s.n)
	shuffle(s.r, perm)
	clear(first)
	for _, u := range perm[:s.n/2] {
		first[u] = true
	}
}

// N is the number of units of the group.
func (s *Splitter) N() int { return s.n }

// WriteSplits writes splits 0 … splits−1 of (seed, key, n) to w as CSV rows label, b, indices in the format of
// WriteIndices (IndicesHeader), the indices being the units of the first half in increasing order, so that
// another implementation can replay the same halvings.
func WriteSplits(w io.Writer, label string, seed int64, key string, n, splits int) error {
	s := NewSplitter(seed, key, n)
	first := make([]bool, n)
	units := make([]int, 0, n/2)
	return writeRows(w, label, splits, func() []int {
		s.Next(first)
		units = units[:0]
		for i, f := range first {
			if f {
				units = append(units, i)
			}
		}
		return units
	})
}
