package bootstrap

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// A draw is fixed by (seed, key, p, m, b): the same arguments give the same answers (the first draws are pinned
// here, so a change of the generator or of the mapping shows), Counts tallies what Fill draws, a category of
// share 0 is never drawn, and WriteDraws writes the answers in the order drawn.
func TestDrawerIsPure(t *testing.T) {
	p := []float64{0.5, 0, 0.3, 0.2}
	d := NewDrawer(1, Key("q1", "all"), p, 6)
	var got []string
	for range 3 {
		a := make([]int, 6)
		d.Fill(a)
		got = append(got, fmt.Sprint(a))
	}
	const want = "[[3 3 2 0 3 3] [2 2 0 3 3 2] [0 0 2 0 2 0]]"
	if fmt.Sprint(got) != want {
		t.Fatalf("draws %v, want %s", got, want)
	}
	c := NewDrawer(1, Key("q1", "all"), []float64{5, 0, 3, 2}, 6) // the same shares, not normalised
	for b, w := range []string{"[1 0 1 4]", "[1 0 3 2]", "[4 0 2 0]"} {
		counts := make([]int, 4)
		c.Counts(counts)
		if fmt.Sprint(counts) != w {
			t.Errorf("draw %d counts %v, want %s (the tally of Fill's)", b, counts, w)
		}
	}
	var sb strings.Builder
	if err := WriteDraws(&sb, "d", 1, Key("q1", "all"), p, 6, 2); err != nil {
		t.Fatal(err)
	}
	if w := "d,1,3;3;2;0;3;3\nd,2,2;2;0;3;3;2\n"; sb.String() != w {
		t.Errorf("WriteDraws wrote %q, want %q", sb.String(), w)
	}
	other := NewDrawer(2, Key("q1", "all"), p, 6)
	a := make([]int, 6)
	other.Fill(a)
	if fmt.Sprint(a) == "[3 3 2 0 3 3]" {
		t.Error("seed 2 draws what seed 1 draws")
	}
}

// Over many answers each category's share comes near its probability (within 5 standard errors), and one of
// probability 0 is never drawn, also where rounding would leave the cumulative sum short of 1.
func TestDrawerFrequencies(t *testing.T) {
	for _, p := range [][]float64{{0.1, 0.2, 0.3, 0.4}, {0, 1, 0}, {1.0 / 3, 1.0 / 3, 1.0 / 3, 0}, {0.7, 0.1, 0.1, 0.1, 0}} {
		const m = 200000
		counts := make([]int, len(p))
		NewDrawer(7, "freq", p, m).Counts(counts)
		var total float64
		for _, v := range p {
			total += v
		}
		for k, v := range p {
			q := v / total
			share := float64(counts[k]) / m
			if q == 0 && counts[k] > 0 {
				t.Errorf("p %v: category %d of share 0 drawn %d times", p, k, counts[k])
			}
			if se := math.Sqrt(q * (1 - q) / m); math.Abs(share-q) > 5*se+1e-12 {
				t.Errorf("p %v: category %d drawn with share %.4f, want %.4f ± %.4f", p, k, share, q, 5*se)
			}
		}
	}
	// A uniform at the very top of [0, 1) lands on the last category with mass, never on a trailing zero.
	d := NewDrawer(1, "top", []float64{0.3, 0.7, 0}, 1)
	if k := d.category(math.Nextafter(1, 0)); k != 1 {
		t.Errorf("u just below 1 maps to category %d, want 1", k)
	}
	d.cum = []float64{0.3, 0.9999999999, 0.9999999999} // a rounded cumulative sum
	if k := d.category(0.99999999995); k != 1 {
		t.Errorf("u above a rounded total maps to category %d, want the last with mass, 1", k)
	}
}

// The draws' stream is the key's own: it is not the stream New or NewSplitter start from for the same seed and
// key, but that of the key under the prefix "draw".
func TestDrawerStreamIsItsOwn(t *testing.T) {
	first := NewDrawer(3, "k", []float64{0.5, 0.5}, 1).r.Float64()
	if first == stream(3, "k").Float64() || first == stream(3, Key("split", "k")).Float64() {
		t.Error("the drawer's stream is a resampler's or a splitter's")
	}
	if first != stream(3, Key("draw", "k")).Float64() {
		t.Error("the drawer's stream is not that of (seed, draw/key)")
	}
}
