package psychometrics

import (
	"errors"
	"math"
)

// Alpha holds the reliability statistics of one scale, computed as R psych's alpha() computes them on a
// data matrix (rows: respondents, columns: items already reverse-keyed) with its defaults: use = "pairwise",
// delete = TRUE, no keys.
//
// Missing values are handled as psych does: the item covariance matrix C is R's cov(x, use = "pairwise"), each
// entry over the respondents who answered both items; the correlation matrix R is cov2cor(C). Items whose
// standard deviation is zero or undefined are left out before anything is computed, as psych's delete = TRUE
// does (it warns "had no variance and was deleted").
type Alpha struct {
	// Items are the columns the statistics use; Dropped the columns left out for zero or undefined variance.
	Items   []int
	Dropped []int
	// Respondents is the number of rows with at least one answer among Items.
	Respondents int
	// Raw is Cronbach's alpha from the covariances (psych raw_alpha): (1 - tr(C)/sum(C)) * k/(k-1).
	Raw float64
	// Std is the standardised alpha from the correlations (psych std.alpha): (1 - k/sum(R)) * k/(k-1).
	Std float64
	// AverageR is the mean inter-item correlation (psych average_r): (sum(R) - k) / (k(k-1)).
	AverageR float64
	// ItemRest[i] is the correlation of item Items[i] with the sum of the other items (psych r.drop), from C:
	// (sum(C[,i]) - C[i,i]) / sqrt(C[i,i] * sum(C[-i,-i])).
	ItemRest []float64
	// IfDropped[i] is Raw computed without item Items[i] (psych alpha.drop raw_alpha); NaN with fewer than
	// three items, where psych reports no drop statistics that match its formula.
	IfDropped []float64
}

// ErrTooFewItems is returned when fewer than two items have variance: alpha is undefined.
var ErrTooFewItems = errors.New("psychometrics: fewer than two items with variance")

// ComputeAlpha computes the statistics of Alpha on x: x[r][c] is respondent r's score on item c, Missing when
// there is none. Every row must have the same length.
func ComputeAlpha(x [][]float64) (Alpha, error) {
	if len(x) == 0 {
		return Alpha{}, ErrTooFewItems
	}
	cols := len(x[0])
	var a Alpha
	for c := range cols {
		if v := columnVariance(x, c); math.IsNaN(v) || v <= 0 {
			a.Dropped = append(a.Dropped, c)
			continue
		}
		a.Items = append(a.Items, c)
	}
	for _, row := range x {
		for _, c := range a.Items {
			if !IsMissing(row[c]) {
				a.Respondents++
				break
			}
		}
	}
	k := len(a.Items)
	if k < 2 {
		return a, ErrTooFewItems
	}
	cAll := pairwiseCov(x, cols)
	cm := sub(cAll, a.Items)
	rm := cov2cor(cm)
	a.Raw, a.Std, a.AverageR = alphaOf(cm, rm)
	a.ItemRest = make([]float64, k)
	a.IfDropped = make([]float64, k)
	for i := range k {
		var col float64
		for j := range k {
			col += cm[j][i]
		}
		rest := drop(cm, i)
		a.ItemRest[i] = (col - cm[i][i]) / math.Sqrt(cm[i][i]*sumAll(rest))
		a.IfDropped[i] = math.NaN()
		if k > 2 {
			a.IfDropped[i], _, _ = alphaOf(rest, drop(rm, i))
		}
	}
	return a, nil
}

// alphaOf is psych's alpha.1 on a covariance matrix c and its correlation matrix r: raw alpha, standardised
// alpha and the average inter-item correlation.
func alphaOf(c, r [][]float64) (raw, std, avr float64) {
	n := float64(len(c))
	raw = (1 - trace(c)/sumAll(c)) * (n / (n - 1))
	sumR := sumAll(r)
	std = (1 - n/sumR) * (n / (n - 1))
	avr = (sumR - n) / (n * (n - 1))
	return raw, std, avr
}

// columnVariance is the sample variance of column c over its present values (NaN with fewer than two).
func columnVariance(x [][]float64, c int) float64 {
	p := pairwise(x, c, c)
	if p.n < 2 {
		return math.NaN()
	}
	return p.sxx / float64(p.n-1)
}
