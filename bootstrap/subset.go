package bootstrap

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
)

// Subsetter draws random subsets of k units out of a group of n, without replacement: the labeled set of a
// self-check that treats k of n respondents as the people asked and holds out the human answers of the rest.
// Subset b (0-based) is the b-th draw of a PCG stream seeded with (seed, FNV-1a 64 of "subset", a NUL byte and
// the key): a Fisher–Yates shuffle of 0 … n−1 by IntN (the shuffle Splitter makes), whose first k units form
// the subset. So subset b is fixed by (seed, key, n, k, b), and a key's subsets never share a stream with its
// resamples, splits or draws.
//
// A Subsetter is not safe for concurrent use.
type Subsetter struct {
	r    *rand.Rand
	n, k int
	perm []int
}

// NewSubsetter returns the Subsetter of k units out of the n of the group named key (see Key) under seed;
// 0 ≤ k ≤ n.
func NewSubsetter(seed int64, key string, n, k int) *Subsetter {
	if k < 0 || k > n {
		panic(fmt.Sprintf("bootstrap: NewSubsetter of %d units out of %d", k, n))
	}
	return &Subsetter{r: stream(seed, Key("subset", key)), n: n, k: k, perm: make([]int, n)}
}

// Next draws the next subset: its k units in increasing order, in a new slice.
func (s *Subsetter) Next() []int {
	shuffle(s.r, s.perm)
	out := slices.Clone(s.perm[:s.k])
	slices.Sort(out)
	return out
}

// shuffle sets perm to a uniformly random permutation of 0 … len(perm)−1: the identity, shuffled by
// Fisher–Yates from the last slot down, slot i swapped with slot IntN(i+1).
func shuffle(r *rand.Rand, perm []int) {
	for i := range perm {
		perm[i] = i
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
}

// WriteSubsets writes subsets 0 … subsets−1 of (seed, key, n, k) to w as CSV rows label, b, indices in the
// format of WriteIndices (IndicesHeader), the indices being the subset's units in increasing order, so that
// another implementation can replay the same labeled sets.
func WriteSubsets(w io.Writer, label string, seed int64, key string, n, k, subsets int) error {
	s := NewSubsetter(seed, key, n, k)
	return writeRows(w, label, subsets, s.Next)
}
