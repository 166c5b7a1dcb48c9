package psychometrics

import (
	"errors"
	"math"
)

// ErrNoVariance is returned when agreement beyond chance is not defined: by ICC21 when every value is the same,
// by CohenKappa when the chance agreement is 1 (every answer one and the same category); and by
// VarianceExplained when every value is the same, so there is no variance to explain.
var ErrNoVariance = errors.New("psychometrics: no variance: every value is the same")

// ErrTooFew is returned by ICC21 for fewer than two targets or two raters, by the κ functions without targets.
var ErrTooFew = errors.New("psychometrics: too few targets or raters")

// ICC21 is the intraclass correlation ICC(2,1) of Shrout & Fleiss (1979), ICC(A,1) of McGraw & Wong (1996): a
// two-way random-effects model, absolute agreement, single rater. x holds n targets (rows) rated by the same k
// raters (columns, every row as long as the first, no missing value). With the two-way ANOVA mean squares
//
//	MSR = k Σ_i (m_i − m)² / (n − 1)             rows (targets)
//	MSC = n Σ_j (m_j − m)² / (k − 1)             columns (raters)
//	MSE = Σ_ij (x_ij − m_i − m_j + m)² / ((n − 1)(k − 1))
//
// (m_i the row means, m_j the column means, m the grand mean) it is
//
//	(MSR − MSE) / (MSR + (k − 1) MSE + k (MSC − MSE) / n),
//
// psych::ICC's "ICC2" row. It is 1 when every row's values are equal and rows differ; ErrNoVariance when the
// denominator is 0 (every value the same), ErrTooFew below 2 × 2, ErrShape for ragged rows or a value that is
// not finite.
func ICC21(x [][]float64) (float64, error) {
	n := len(x)
	if n < 2 || len(x[0]) < 2 {
		return math.NaN(), ErrTooFew
	}
	k := len(x[0])
	var grand float64
	rowMean := make([]float64, n)
	colMean := make([]float64, k)
	for i, row := range x {
		if len(row) != k {
			return math.NaN(), ErrShape
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return math.NaN(), ErrShape
			}
			rowMean[i] += v
			colMean[j] += v
			grand += v
		}
	}
	for i := range rowMean {
		rowMean[i] /= float64(k)
	}
	for j := range colMean {
		colMean[j] /= float64(n)
	}
	grand /= float64(n * k)
	var ssr, ssc, sse float64
	for _, m := range rowMean {
		ssr += (m - grand) * (m - grand)
	}
	for _, m := range colMean {
		ssc += (m - grand) * (m - grand)
	}
	for i, row := range x {
		for j, v := range row {
			e := v - rowMean[i] - colMean[j] + grand
			sse += e * e
		}
	}
	fn, fk := float64(n), float64(k)
	msr := fk * ssr / (fn - 1)
	msc := fn * ssc / (fk - 1)
	mse := sse / ((fn - 1) * (fk - 1))
	den := msr + (fk-1)*mse + fk*(msc-mse)/fn
	if den == 0 {
		return math.NaN(), ErrNoVariance
	}
	return (msr - mse) / den, nil
}

// ErrShape is returned for a matrix with rows of different lengths or a value that is not finite.
var ErrShape = errors.New("psychometrics: rows of different lengths or a value that is not finite")

// ChanceAgreement is p_e of Cohen's κ for two raters' categorical answers to the same targets, a[i] and b[i]:
// Σ_c a_c b_c over the categories c, with a_c and b_c each rater's share of answers c. Categories nobody chose
// add nothing, so the set of categories offered does not matter. ErrTooFew without targets, ErrShape for lists
// of different lengths.
func ChanceAgreement[C comparable](a, b []C) (float64, error) {
	if len(a) != len(b) {
		return math.NaN(), ErrShape
	}
	if len(a) == 0 {
		return math.NaN(), ErrTooFew
	}
	ca, cb := map[C]int{}, map[C]int{}
	var order []C // a's categories in order of first appearance: p_e sums in a fixed order, so reruns are identical
	for i := range a {
		if ca[a[i]] == 0 {
			order = append(order, a[i])
		}
		ca[a[i]]++
		cb[b[i]]++
	}
	n := float64(len(a))
	var pe float64
	for _, c := range order {
		pe += float64(ca[c]) / n * float64(cb[c]) / n
	}
	return pe, nil
}

// CohenKappa is Cohen's unweighted κ of two raters' categorical answers to the same targets, a[i] and b[i]:
// (p_o − p_e) / (1 − p_e), with p_o the share of targets on which they agree and p_e their ChanceAgreement.
// ErrNoVariance when p_e = 1 (both raters gave one and the same category to every target); ErrTooFew without
// targets; ErrShape for lists of different lengths.
func CohenKappa[C comparable](a, b []C) (float64, error) {
	pe, err := ChanceAgreement(a, b)
	if err != nil {
		return math.NaN(), err
	}
	agree := 0
	for i := range a {
		if a[i] == b[i] {
			agree++
		}
	}
	return KappaOf(float64(agree)/float64(len(a)), pe)
}

// KappaOf is (po − pe) / (1 − pe): κ from an observed and a chance agreement; ErrNoVariance when pe = 1.
func KappaOf(po, pe float64) (float64, error) {
	if pe >= 1 {
		return math.NaN(), ErrNoVariance
	}
	return (po - pe) / (1 - pe), nil
}
