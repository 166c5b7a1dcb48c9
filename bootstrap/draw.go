package bootstrap

import (
	"fmt"
	"io"
	"math/rand/v2"
)

// Drawer draws the samples of a parametric bootstrap: samples of m answers from a fixed distribution p over K
// categories (what a respondent who answers as p says, m times). Its stream is a PCG generator seeded with
// (seed, FNV-1a 64 of "draw", a NUL byte and the key), so a key's draws never share a stream with its
// resamples or splits. Draw b (0-based) is the b-th block of m uniforms (Float64) of that stream, each mapped
// to the first category whose cumulative share of p exceeds it. Draw b is therefore fixed by (seed, key, p,
// m, b) alone, and WriteDraws writes the draws for another implementation to replay.
//
// A Drawer is not safe for concurrent use.
type Drawer struct {
	r   *rand.Rand
	cum []float64
	m   int
}

// NewDrawer returns the Drawer of m answers from p (non-negative, some positive; it need not sum to 1) under
// seed and the key (see Key).
func NewDrawer(seed int64, key string, p []float64, m int) *Drawer {
	var total float64
	for _, v := range p {
		total += v
	}
	if total <= 0 || m < 0 {
		panic(fmt.Sprintf("bootstrap: NewDrawer of %d answers from %v", m, p))
	}
	cum := make([]float64, len(p))
	var c float64
	for k, v := range p {
		c += v
		cum[k] = c / total
	}
	return &Drawer{r: stream(seed, Key("draw", key)), cum: cum, m: m}
}

// M is the number of answers of a draw.
func (d *Drawer) M() int { return d.m }

// Fill draws the next sample into answers, which must have length M: answers[i] is the category of answer i.
func (d *Drawer) Fill(answers []int) {
	if len(answers) != d.m {
		panic(fmt.Sprintf("bootstrap: Fill of %d answers on a drawer of %d", len(answers), d.m))
	}
	for i := range answers {
		answers[i] = d.category(d.r.Float64())
	}
}

// category is the first category whose cumulative share exceeds u; when rounding leaves the last share below
// u, the last category with a positive share.
func (d *Drawer) category(u float64) int {
	for k, c := range d.cum {
		if u < c {
			return k
		}
	}
	last := len(d.cum) - 1
	for last > 0 && d.cum[last] == d.cum[last-1] {
		last--
	}
	return last
}

// Counts draws the next sample and writes into counts (length K, overwritten) how many of its answers fell
// in each category: the draw Fill would have made, tallied.
func (d *Drawer) Counts(counts []int) {
	if len(counts) != len(d.cum) {
		panic(fmt.Sprintf("bootstrap: Counts of %d categories on a drawer of %d", len(counts), len(d.cum)))
	}
	clear(counts)
	for range d.m {
		counts[d.category(d.r.Float64())]++
	}
}

// WriteDraws writes draws 0 … samples−1 of (seed, key, p, m) to w as CSV rows label, b, indices in the format
// of WriteIndices (IndicesHeader), the indices being the 0-based categories of the draw's m answers in the
// order drawn.
func WriteDraws(w io.Writer, label string, seed int64, key string, p []float64, m, samples int) error {
	d := NewDrawer(seed, key, p, m)
	answers := make([]int, m)
	return writeRows(w, label, samples, func() []int {
		d.Fill(answers)
		return answers
	})
}
