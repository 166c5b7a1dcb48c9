package psychometrics

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Reliability is the reliability of one scale on one data matrix, as the outputs report it: Alpha's statistics
// and omega total over the items alpha uses.
type Reliability struct {
	Alpha
	// Err is ComputeAlpha's error: alpha is undefined (fewer than two items with variance), Alpha holds only
	// Items, Dropped and Respondents, and Omega is NaN.
	Err error
	// Omega is OmegaTotal over Alpha.Items, NaN where it is undefined; OmegaErr then says why (Err when alpha
	// is undefined too).
	Omega    float64
	OmegaErr error
}

// ErrFewerRespondents is ScaleReliability's refusal of a matrix with fewer respondents than items used: its
// covariance matrix is singular, which psych's omega() refuses and alpha() does not.
var ErrFewerRespondents = errors.New("psychometrics: fewer respondents than items, so the covariance matrix is singular")

// ErrNoTotalVariance is ScaleReliability's refusal of a matrix whose total score does not vary: the sum of its
// covariance matrix is zero to rounding (|ΣC| ≤ totalVarianceTolerance · tr C), so α = (1 − tr C/ΣC)·k/(k−1)
// is ±∞ or a rounding error's quotient (a bootstrap resample of a few personas drew −2·10¹⁶). psych's alpha()
// prints that number.
var ErrNoTotalVariance = errors.New("psychometrics: the total score does not vary (its variance is zero to rounding)")

// totalVarianceTolerance is ErrNoTotalVariance's bound relative to tr C: rounding in ΣC's k² terms is of order
// k²·2⁻⁵³·tr C, some 10⁻¹⁴ for five items, so 10⁻¹² leaves a margin of a hundred while no total variance a
// scale can have comes near it.
const totalVarianceTolerance = 1e-12

// ScaleReliability computes ComputeAlpha on x and, where alpha is defined, OmegaTotal over the items it uses. It
// is the one α/ω step of every reliability figure: a model's per seed (reliability.csv), a model's against a
// human reference and the human reference's own (reference_scales.csv). Unlike ComputeAlpha (psych's alpha()),
// it leaves α undefined, with ErrFewerRespondents, where fewer respondents than items answered, and with
// ErrNoTotalVariance where the total score does not vary.
func ScaleReliability(x [][]float64) Reliability { return ScaleReliabilityWeighted(x, nil) }

// ScaleReliabilityWeighted is ScaleReliability with respondent r weighted w[r] (nil: ScaleReliability itself):
// ComputeAlphaWeighted and OmegaTotalWeighted. Invalid weights leave both undefined with ErrWeights.
func ScaleReliabilityWeighted(x [][]float64, w []float64) Reliability {
	if err := checkWeights(x, w); err != nil {
		return Reliability{Err: err, Omega: math.NaN(), OmegaErr: err}
	}
	// One pass per pair of items serves both: alpha's covariances and omega's correlations are made of the same
	// sums (so this is ComputeAlphaWeighted and OmegaTotalWeighted to the bit, at about half the cost).
	t := newPairTable(x, w, allColumns(x))
	a, err := alphaFrom(x, w, t)
	if err == nil && a.Respondents < len(a.Items) {
		// psych's alpha() computes a number here, from a covariance matrix of rank below its size; it says
		// nothing of the scale (groups of two personas gave α of −47), so every reliability figure refuses it.
		err = fmt.Errorf("%w (%d for %d items)", ErrFewerRespondents, a.Respondents, len(a.Items))
	}
	if err == nil {
		if cm := t.cov(a.Items); math.Abs(sumAll(cm)) <= totalVarianceTolerance*trace(cm) {
			err = ErrNoTotalVariance
		}
	}
	r := Reliability{Alpha: a, Err: err, Omega: math.NaN(), OmegaErr: err}
	if err == nil {
		r.Omega, r.OmegaErr = OmegaFromCorrelations(t.cor(a.Items))
	}
	return r
}

// Note says why a number of r is missing, as the note column of reliability.csv and reference_scales.csv
// writes it: "alpha and omega: <reason>" when alpha is undefined, "omega: <reason>" when only omega is, empty
// when both are numbers.
func (r Reliability) Note() string {
	switch {
	case r.Err != nil:
		return "alpha and omega: " + reason(r.Err)
	case r.OmegaErr != nil:
		return "omega: " + reason(r.OmegaErr)
	}
	return ""
}

// reason is an error's text without the package prefix.
func reason(err error) string { return strings.TrimPrefix(err.Error(), "psychometrics: ") }
