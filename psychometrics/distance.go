package psychometrics

import (
	"errors"
	"math"
)

// ErrDistribution is returned for a pair of answer distributions that cannot be compared: different lengths,
// no options, a negative or non-finite probability, or a total that is not 1 (within 1e-9).
var ErrDistribution = errors.New("psychometrics: not a pair of probability distributions over the same options")

// sumTolerance is how far from 1 the total of a distribution may be: a mean of pmfs, or counts divided by
// their total, sums to 1 only up to rounding.
const sumTolerance = 1e-9

// checkPMF reports whether p is a probability distribution: finite, non-negative values summing to 1.
func checkPMF(p []float64) bool {
	if len(p) == 0 {
		return false
	}
	var s float64
	for _, v := range p {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		s += v
	}
	return math.Abs(s-1) <= sumTolerance
}

func checkPair(p, q []float64) error {
	if len(p) != len(q) || !checkPMF(p) || !checkPMF(q) {
		return ErrDistribution
	}
	return nil
}

// Wasserstein1 is the 1-Wasserstein (earth mover's) distance between two distributions over the same ordered
// options 1..K at unit spacing: Σ_k |P(k) − Q(k)| over the cumulative distributions P and Q. It is what
// scipy.stats.wasserstein_distance gives for the values 1..K weighted by p and q, and lies in [0, K−1]:
// point masses at the first and the last option are K−1 apart.
func Wasserstein1(p, q []float64) (float64, error) {
	if err := checkPair(p, q); err != nil {
		return math.NaN(), err
	}
	var cp, cq, d float64
	// The last cumulative values are both 1: their difference is rounding, not distance.
	for k := range len(p) - 1 {
		cp += p[k]
		cq += q[k]
		d += math.Abs(cp - cq)
	}
	return d, nil
}

// JensenShannon is the Jensen–Shannon divergence of p and q in bits: ½ KL(p‖m) + ½ KL(q‖m) with m = ½(p + q),
// where a term with p_k = 0 contributes 0 (0 · log 0 = 0). It is symmetric, 0 for equal distributions and 1 for
// distributions with disjoint support. (scipy's jensenshannon returns the square root of this, the
// Jensen–Shannon distance.)
func JensenShannon(p, q []float64) (float64, error) {
	if err := checkPair(p, q); err != nil {
		return math.NaN(), err
	}
	var d float64
	for k := range p {
		m := (p[k] + q[k]) / 2
		if p[k] > 0 {
			d += p[k] * math.Log2(p[k]/m)
		}
		if q[k] > 0 {
			d += q[k] * math.Log2(q[k]/m)
		}
	}
	// Rounding can leave a tiny negative value for equal inputs or one just above 1 for disjoint ones.
	return min(max(d/2, 0), 1), nil
}

// Entropy is the Shannon entropy of p in bits: −Σ p_k log₂ p_k, with 0 · log 0 = 0. It is 0 for a point mass
// and log₂ K for the uniform distribution over K options.
func Entropy(p []float64) (float64, error) {
	if !checkPMF(p) {
		return math.NaN(), ErrDistribution
	}
	var h float64
	for _, v := range p {
		if v > 0 {
			h -= v * math.Log2(v)
		}
	}
	return max(h, 0), nil
}

// TotalVariation is the total variation distance of p and q: ½ Σ_k |p_k − q_k|, the largest difference in
// probability the two give any set of options. It lies in [0, 1] and is 1 for disjoint supports.
func TotalVariation(p, q []float64) (float64, error) {
	if err := checkPair(p, q); err != nil {
		return math.NaN(), err
	}
	return totalVariation(p, q), nil
}

func totalVariation(p, q []float64) float64 {
	var d float64
	for k := range p {
		d += math.Abs(p[k] - q[k])
	}
	return min(d/2, 1)
}

// ErrUniformReference is returned by SimBench when the reference distribution is uniform (within the 1e-9 to
// which a distribution sums to 1): the uniform baseline is then a perfect answer and the score divides by zero.
var ErrUniformReference = errors.New("psychometrics: the reference distribution is uniform, so the uniform baseline's distance to it is 0")

// SimBench is SimBench's score of a distribution p against a reference q (the model's against the humans'):
// 100 · (1 − TV(p, q) / TV(u, q)) with u uniform over the same options and TV the total variation distance. It
// is 100 for p = q, 0 for a p as far from q as the uniform answer is, and negative for one further away. A q
// whose distance to u is 1e-9 or less counts as uniform and gives ErrUniformReference.
func SimBench(p, q []float64) (float64, error) {
	if err := checkPair(p, q); err != nil {
		return math.NaN(), err
	}
	u := make([]float64, len(q))
	for k := range u {
		u[k] = 1 / float64(len(q))
	}
	base := totalVariation(u, q)
	if base <= sumTolerance {
		return math.NaN(), ErrUniformReference
	}
	return 100 * (1 - totalVariation(p, q)/base), nil
}

// ErrSpan is returned by Alignment for a span that is not a positive finite number or a distance that is
// negative or not a number.
var ErrSpan = errors.New("psychometrics: alignment needs a distance of 0 or more and a positive span")

// Alignment is OpinionQA's alignment of two distributions over ordinal options from their 1-Wasserstein
// distance w1: 1 − w1/span, span = v_K − v₁ the distance between the first and the last option's values (K − 1
// at unit spacing, where Wasserstein1 measures). It is 1 for equal distributions and 0 for point masses at the
// two ends.
func Alignment(w1, span float64) (float64, error) {
	if !(span > 0) || math.IsInf(span, 0) || !(w1 >= 0) {
		return math.NaN(), ErrSpan
	}
	return 1 - w1/span, nil
}
