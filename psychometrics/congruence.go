package psychometrics

import (
	"errors"
	"math"
)

// ErrCongruence is returned by Congruence for vectors of different lengths, empty ones, ones with a value that
// is not a finite number, or one that is all zeros (its direction is undefined).
var ErrCongruence = errors.New("psychometrics: congruence needs two non-zero vectors of finite numbers of one length")

// Congruence is Tucker's coefficient of congruence of two loading vectors over the same items:
// Σ x_i y_i / √(Σ x_i² · Σ y_i²), psych's factor.congruence(x, y) for one factor each (without its rounding).
// It is the cosine of the angle between them: 1 for proportional loadings, −1 for a factor of opposite sign,
// and unlike a correlation it does not centre the loadings.
func Congruence(x, y []float64) (float64, error) {
	if len(x) != len(y) || len(x) == 0 {
		return math.NaN(), ErrCongruence
	}
	var sxy, sxx, syy float64
	for i := range x {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) || math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return math.NaN(), ErrCongruence
		}
		sxy += x[i] * y[i]
		sxx += x[i] * x[i]
		syy += y[i] * y[i]
	}
	if sxx == 0 || syy == 0 {
		return math.NaN(), ErrCongruence
	}
	// Rounding can carry a proportional pair a unit past ±1.
	return min(max(sxy/math.Sqrt(sxx*syy), -1), 1), nil
}
