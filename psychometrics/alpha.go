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
func ComputeAlpha(x [][]float64) (Alpha, error) { return ComputeAlphaWeighted(x, nil) }

// ComputeAlphaWeighted is ComputeAlpha with respondent r weighted w[r] (nil: unweighted, ComputeAlpha itself):
// C is Covariances(x, w), the weighted pairwise covariances, R is cov2cor(C), and every statistic follows from
// C and R as psych's alpha() computes it on a covariance matrix. An item is left out when its weighted variance
// is zero or undefined (fewer than two respondents with positive weight answered it); Respondents counts the
// rows with an answer among Items and a positive weight. Invalid weights give ErrWeights.
//
// A bootstrap resample of weighted respondents is the matrix of the drawn rows, each with its own weight. On a
// matrix without missing answers passing instead the original rows weighted count × weight gives the same
// statistics (they do not change when every covariance is scaled alike); with pairwise missing answers it does
// not quite, since the divisor 1 − Σv² of each pair then differs.
func ComputeAlphaWeighted(x [][]float64, w []float64) (Alpha, error) {
	if err := checkWeights(x, w); err != nil {
		return Alpha{}, err
	}
	return alphaFrom(x, w, newPairTable(x, w, allColumns(x)))
}

// alphaFrom is ComputeAlphaWeighted on checked weights, t the pairTable of all of x's columns.
func alphaFrom(x [][]float64, w []float64, t pairTable) (Alpha, error) {
	if len(x) == 0 {
		return Alpha{}, ErrTooFewItems
	}
	cols := len(x[0])
	var a Alpha
	for c := range cols {
		if v := t.variance(c); math.IsNaN(v) || v <= 0 {
			a.Dropped = append(a.Dropped, c)
			continue
		}
		a.Items = append(a.Items, c)
	}
	for r, row := range x {
		if w != nil && w[r] == 0 {
			continue
		}
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
	cm := t.cov(a.Items)
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
