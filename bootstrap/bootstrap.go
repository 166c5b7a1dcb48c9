// Package bootstrap draws the resamples of a nonparametric bootstrap and turns resampled statistics into
// percentile intervals.
//
// A resample of a group of n units (personas, respondents) is n indices drawn uniformly with replacement
// from [0, n). The draws are a pure function of the spec's seed, a key naming the group and the resample's
// number: two callers that ask for the same (seed, key, n) get the same resamples in the same order, whatever
// the concurrency around them, and WriteIndices writes them for another implementation to replay.
//
// A weighted bootstrap needs no weighted draws here: the units are drawn as above and each drawn unit carries
// its own weight into the statistic.
package bootstrap

import (
	"encoding/csv"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Resampler draws the resamples of one group: a PCG generator (math/rand/v2) seeded with (seed, FNV-1a 64 of
// the key), and resample b (0-based) is the b-th block of n draws of IntN(n) from that stream, one per unit
// slot. Resample b is therefore fixed by (seed, key, n, b) alone; the draws of one resample depend on n, so
// groups of different sizes under one key do not share resamples.
//
// A Resampler is not safe for concurrent use; to work on resamples in parallel, draw their indices first (in
// order, from one Resampler or with Indices) and hand them out.
type Resampler struct {
	r *rand.Rand
	n int
	b int
}

// Key joins the parts of a composite key with NUL bytes, so that ("ab", "c") and ("a", "bc") are different
// keys. New hashes the joined bytes, which is the same as hashing each part followed by a NUL but the last.
func Key(parts ...string) string { return strings.Join(parts, "\x00") }

// New returns the Resampler of the group named key (see Key) with n units under seed.
func New(seed int64, key string, n int) *Resampler {
	return &Resampler{r: stream(seed, key), n: n}
}

// stream is the PCG generator of (seed, FNV-1a 64 of key): every stream of the package starts so.
func stream(seed int64, key string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(key))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// N is the number of units of the group: the length of every resample.
func (rs *Resampler) N() int { return rs.n }

// Drawn is the number of resamples drawn so far: the next one is resample Drawn() (0-based).
func (rs *Resampler) Drawn() int { return rs.b }

// Fill draws the next resample into idx, which must have length N: idx[i] is the unit drawn for slot i.
func (rs *Resampler) Fill(idx []int) {
	if len(idx) != rs.n {
		panic(fmt.Sprintf("bootstrap: Fill of %d slots on a resampler of %d units", len(idx), rs.n))
	}
	for i := range idx {
		idx[i] = rs.r.IntN(rs.n)
	}
	rs.b++
}

// Next draws the next resample into a new slice.
func (rs *Resampler) Next() []int {
	idx := make([]int, rs.n)
	rs.Fill(idx)
	return idx
}

// Counts draws the next resample and writes into counts (length N, overwritten) how often each unit was
// drawn: the multiplicities with which a statistic that is a weighted sum over units sees the resample.
func (rs *Resampler) Counts(counts []int) {
	if len(counts) != rs.n {
		panic(fmt.Sprintf("bootstrap: Counts of %d units on a resampler of %d units", len(counts), rs.n))
	}
	clear(counts)
	for range rs.n {
		counts[rs.r.IntN(rs.n)]++
	}
	rs.b++
}

// Indices returns resamples 0 … samples−1 of the group named key with n units under seed, as a new Resampler
// draws them.
func Indices(seed int64, key string, n, samples int) [][]int {
	rs := New(seed, key, n)
	out := make([][]int, samples)
	for b := range out {
		out[b] = rs.Next()
	}
	return out
}

// IndicesHeader is the header line of the CSV that WriteIndices writes rows of (without its line end): the
// caller's label for the group, the resample number b (1-based, as R counts) and the resample's unit indices
// (0-based) joined with ";".
const IndicesHeader = "label,b,indices"

// WriteIndices writes resamples 0 … samples−1 of (seed, key, n) to w as CSV rows label, b, indices (see
// IndicesHeader; the header itself is the caller's to write once per file, so that several groups can share
// one file). label is what the reader matches the rows by; it need not be the key (a key joined by Key holds
// NUL bytes, which R cannot read). An implementation that replays these rows computes its statistics on
// exactly the resamples Go takes.
func WriteIndices(w io.Writer, label string, seed int64, key string, n, samples int) error {
	rs := New(seed, key, n)
	idx := make([]int, n)
	return writeRows(w, label, samples, func() []int {
		rs.Fill(idx)
		return idx
	})
}

// writeRows writes rows label, b, indices for b = 1 … samples, next giving each row's indices.
func writeRows(w io.Writer, label string, samples int, next func() []int) error {
	cw := csv.NewWriter(w)
	var sb strings.Builder
	for b := range samples {
		sb.Reset()
		for i, v := range next() {
			if i > 0 {
				sb.WriteByte(';')
			}
			sb.WriteString(strconv.Itoa(v))
		}
		if err := cw.Write([]string{label, strconv.Itoa(b + 1), sb.String()}); err != nil {
			return fmt.Errorf("bootstrap: write indices of %q: %w", label, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("bootstrap: write indices of %q: %w", label, err)
	}
	return nil
}

// Interval returns the percentile interval of a statistic's resampled values: the 2.5 % and 97.5 % quantiles
// (R's quantile type 7) of the values that are not NaN. A NaN is a resample on which the statistic is
// undefined (a group with no cells under one order, a singular matrix) and is left out, so the interval is
// the one of the resamples that define the statistic; at least one must, otherwise lo and hi are nil.
// Infinities are kept and ordered as numbers. values is not modified.
func Interval(values []float64) (lo, hi *float64) {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return nil, nil
	}
	slices.Sort(v)
	// The literals, not 1 − 0.95 halved: that is 0.025000000000000022 in float64.
	a, b := Quantile7(v, 0.025), Quantile7(v, 0.975)
	return &a, &b
}

// Quantile7 is R's quantile(x, p, type = 7) of sorted, non-empty x: with h = (n − 1)p, x[⌊h⌋] + (h − ⌊h⌋)
// (x[⌊h⌋+1] − x[⌊h⌋]), positions 0-based. Where the two neighbours are equal it returns that value, as R does
// (which also keeps a run of equal infinities from giving NaN).
func Quantile7(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	if sorted[lo+1] == sorted[lo] {
		return sorted[lo]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}
