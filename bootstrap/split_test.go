package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSplits: every split halves the group (⌊n/2⌋ units first), the splits are a pure function of
// (seed, key, n, b), they differ from split to split, and over many splits every unit lands in the first half
// about half of the time (a fixed seed, so the check is deterministic).
func TestSplits(t *testing.T) {
	for _, n := range []int{1, 2, 7, 40} {
		a, b := NewSplitter(3, "humans", n), NewSplitter(3, "humans", n)
		other := NewSplitter(4, "humans", n)
		seen := map[string]bool{}
		inFirst := make([]int, n)
		const splits = 2000
		differs := false
		for range splits {
			x, y, z := make([]bool, n), make([]bool, n), make([]bool, n)
			a.Next(x)
			b.Next(y)
			other.Next(z)
			if !slices.Equal(x, y) {
				t.Fatalf("n=%d: two splitters of one (seed, key, n) disagree", n)
			}
			differs = differs || !slices.Equal(x, z)
			k := 0
			for i, f := range x {
				if f {
					k++
					inFirst[i]++
				}
			}
			if k != n/2 {
				t.Fatalf("n=%d: first half of %d units, want %d", n, k, n/2)
			}
			seen[fmt.Sprint(x)] = true
		}
		// Every one of the C(7, 3) = 35 halvings of 7 units turns up; 2000 of 40 units never repeat.
		if want := map[int]int{7: 35, 40: splits}[n]; want > 0 && (len(seen) != want || !differs) {
			t.Errorf("n=%d: %d distinct splits of %d, want %d; another seed differs %v", n, len(seen), splits, want, differs)
		}
		if n >= 2 {
			for i, c := range inFirst {
				share := float64(c) / splits
				want := float64(n/2) / float64(n)
				if share < want-0.05 || share > want+0.05 {
					t.Errorf("n=%d: unit %d first in %.3f of the splits, want about %.3f", n, i, share, want)
				}
			}
		}
	}
}

// TestSplitStream pins the first splits of one stream, as TestStream does for resamples.
func TestSplitStream(t *testing.T) {
	s := NewSplitter(1, Key("humans", "A1"), 8)
	var got []string
	for range 3 {
		first := make([]bool, 8)
		s.Next(first)
		var units []int
		for i, f := range first {
			if f {
				units = append(units, i)
			}
		}
		got = append(got, fmt.Sprint(units))
	}
	const want = "[[1 2 4 6] [0 2 3 7] [2 3 6 7]]"
	if fmt.Sprint(got) != want {
		t.Fatalf("splits %v, want %s", got, want)
	}
	var b strings.Builder
	if err := WriteSplits(&b, "A1", 1, Key("humans", "A1"), 8, 3); err != nil {
		t.Fatal(err)
	}
	if w := "A1,1,1;2;4;6\nA1,2,0;2;3;7\nA1,3,2;3;6;7\n"; b.String() != w {
		t.Fatalf("WriteSplits wrote %q, want %q", b.String(), w)
	}
}
