package psychometrics

import (
	"errors"
	"fmt"
	"math"
)

// ErrTooFewValues is returned when too few values with positive weight are present for the statistic: none
// for a mean, fewer than two for a standard deviation.
var ErrTooFewValues = errors.New("psychometrics: too few values with positive weight")

// moments are the weighted sums of the values a statistic uses: the values that are not Missing and weigh more
// than 0 (every value weighs 1 without weights).
type moments struct {
	n      int
	w, w2  float64 // Σw, Σw²
	mean   float64 // Σwy / Σw
	ss     float64 // Σw (y − mean)²
	weight func(i int) float64
}

func momentsOf(y, w []float64) (moments, error) {
	if w != nil && len(w) != len(y) {
		return moments{}, fmt.Errorf("%w: %d weights for %d values", ErrWeights, len(w), len(y))
	}
	m := moments{weight: func(int) float64 { return 1 }}
	if w != nil {
		for i, v := range w {
			if !(v >= 0) || math.IsInf(v, 0) {
				return moments{}, fmt.Errorf("%w: value %d weighs %v", ErrWeights, i, v)
			}
		}
		m.weight = func(i int) float64 { return w[i] }
	}
	var s float64
	for i, v := range y {
		if wi := m.weight(i); !IsMissing(v) && wi > 0 {
			s += wi * v
			m.w += wi
			m.w2 += wi * wi
			m.n++
		}
	}
	if m.n == 0 {
		return m, ErrTooFewValues
	}
	m.mean = s / m.w
	for i, v := range y {
		if wi := m.weight(i); !IsMissing(v) && wi > 0 {
			m.ss += wi * (v - m.mean) * (v - m.mean)
		}
	}
	return m, nil
}

// WeightedMean is Σ w_i y_i / Σ w_i over the values that are not Missing and weigh more than 0 (nil w: the
// plain mean of the present values), R's weighted.mean(y, w, na.rm = TRUE) where w > 0. Invalid weights (not
// one finite number of 0 or more per value) give ErrWeights, no value ErrTooFewValues.
func WeightedMean(y, w []float64) (float64, error) {
	m, err := momentsOf(y, w)
	if err != nil {
		return math.NaN(), err
	}
	return m.mean, nil
}

// WeightedSD is the weighted standard deviation of the values WeightedMean uses: √(Σ v_i (y_i − m)² / (1 − Σ
// v_i²)) with v = w/Σw the normalised weights and m the weighted mean, R's sqrt(cov.wt(cbind(y), w, method =
// "unbiased")$cov) on those values. The divisor treats the weights as reliability weights: with unit weights it
// is sd(y) with its n − 1, and weights scale freely (w and 2w give the same SD). Fewer than two values give
// ErrTooFewValues.
func WeightedSD(y, w []float64) (float64, error) {
	m, err := momentsOf(y, w)
	if err != nil {
		return math.NaN(), err
	}
	if m.n < 2 {
		return math.NaN(), ErrTooFewValues
	}
	return math.Sqrt(m.ss / (m.w - m.w2/m.w)), nil
}

// VarianceExplained is the share of the (weighted) variance of y explained by a grouping, R² = SS_between /
// SS_total: y[i] is a value, g[i] its group and w[i] its weight (nil: unweighted); SS_total = Σ w (y − m)²
// about the weighted grand mean m, SS_between = Σ w (m_g − m)² with m_g the weighted mean of the value's group.
// It is summary(lm(y ~ factor(g), weights = w))$r.squared. Values that are Missing or weigh 0 are left out (R's
// lm drops NA and gives zero weights no say). It lies in [0, 1]: 0 when every group has the grand mean, 1 when
// values vary only between groups. Every value the same gives ErrNoVariance; invalid weights ErrWeights.
func VarianceExplained[G comparable](y []float64, g []G, w []float64) (float64, error) {
	if len(g) != len(y) {
		return math.NaN(), fmt.Errorf("psychometrics: %d group labels for %d values", len(g), len(y))
	}
	m, err := momentsOf(y, w)
	if err != nil {
		return math.NaN(), err
	}
	type sums struct{ w, wy float64 }
	groups := map[G]*sums{}
	for i, v := range y {
		if wi := m.weight(i); !IsMissing(v) && wi > 0 {
			s := groups[g[i]]
			if s == nil {
				s = &sums{}
				groups[g[i]] = s
			}
			s.w += wi
			s.wy += wi * v
		}
	}
	// SS_within summed value by value (not group by group, so no map order reaches the result) and R² as
	// 1 − SS_within/SS_total, which equals SS_between/SS_total; the within sum is the one that stays exact when
	// a group is a single value.
	var within float64
	for i, v := range y {
		if wi := m.weight(i); !IsMissing(v) && wi > 0 {
			s := groups[g[i]]
			d := v - s.wy/s.w
			within += wi * d * d
		}
	}
	if m.ss == 0 {
		return math.NaN(), ErrNoVariance
	}
	return min(max(1-within/m.ss, 0), 1), nil
}
