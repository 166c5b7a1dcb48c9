package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSubsets: every subset has k distinct units in increasing order, the subsets are a pure function of
// (seed, key, n, k, b), another seed or key draws others, and over many draws every unit is in the subset
// about k/n of the time (a fixed seed, so the check is deterministic).
func TestSubsets(t *testing.T) {
	for _, c := range []struct{ n, k int }{{1, 1}, {5, 0}, {5, 5}, {9, 2}, {40, 13}} {
		a, b := NewSubsetter(3, "labeled", c.n, c.k), NewSubsetter(3, "labeled", c.n, c.k)
		seed, key := NewSubsetter(4, "labeled", c.n, c.k), NewSubsetter(3, "other", c.n, c.k)
		in := make([]int, c.n)
		seen := map[string]bool{}
		const draws = 3000
		differs := false
		for range draws {
			x, y := a.Next(), b.Next()
			if !slices.Equal(x, y) {
				t.Fatalf("n=%d k=%d: two subsetters of one (seed, key, n, k) disagree", c.n, c.k)
			}
			differs = differs || !slices.Equal(x, seed.Next()) || !slices.Equal(x, key.Next())
			if len(x) != c.k || !slices.IsSorted(x) || len(slices.Compact(slices.Clone(x))) != c.k {
				t.Fatalf("n=%d k=%d: subset %v is not k distinct units in order", c.n, c.k, x)
			}
			for _, u := range x {
				if u < 0 || u >= c.n {
					t.Fatalf("n=%d k=%d: unit %d out of range", c.n, c.k, u)
				}
				in[u]++
			}
			seen[fmt.Sprint(x)] = true
		}
		// All C(9, 2) = 36 subsets of 2 of 9 units turn up.
		if c.n == 9 && len(seen) != 36 {
			t.Errorf("n=9 k=2: %d distinct subsets, want 36", len(seen))
		}
		if c.k > 0 && c.k < c.n {
			if !differs {
				t.Errorf("n=%d k=%d: another seed or key draws the same subsets", c.n, c.k)
			}
			for u, m := range in {
				share, want := float64(m)/draws, float64(c.k)/float64(c.n)
				if share < want-0.04 || share > want+0.04 {
					t.Errorf("n=%d k=%d: unit %d in %.3f of the subsets, want about %.3f", c.n, c.k, u, share, want)
				}
			}
		}
	}
}

// TestSubsetStream pins the first subsets of one stream, and shows that the subsets of a key are not the
// first halves its Splitter draws (a stream of their own).
func TestSubsetStream(t *testing.T) {
	s := NewSubsetter(1, Key("humans", "A1"), 8, 4)
	var got []string
	for range 3 {
		got = append(got, fmt.Sprint(s.Next()))
	}
	const want = "[[0 5 6 7] [4 5 6 7] [1 2 4 7]]"
	if fmt.Sprint(got) != want {
		t.Fatalf("subsets %v, want %s", got, want)
	}
	var b strings.Builder
	if err := WriteSubsets(&b, "A1", 1, Key("humans", "A1"), 8, 4, 3); err != nil {
		t.Fatal(err)
	}
	if w := "A1,1,0;5;6;7\nA1,2,4;5;6;7\nA1,3,1;2;4;7\n"; b.String() != w {
		t.Fatalf("WriteSubsets wrote %q, want %q", b.String(), w)
	}
}
