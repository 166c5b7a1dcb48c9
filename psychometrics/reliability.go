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

// ScaleReliability computes ComputeAlpha on x and, where alpha is defined, OmegaTotal over the items it uses. It
// is the one α/ω step of every reliability figure: a model's per seed (reliability.csv), a model's against a
// human reference and the human reference's own (reference_scales.csv). Unlike ComputeAlpha (psych's alpha()),
// it leaves α undefined, with ErrFewerRespondents, where fewer respondents than items answered.
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
	r := Reliability{Alpha: a, Err: err, Omega: math.NaN(), OmegaErr: err}
	if err == nil {
		r.Omega, r.OmegaErr = OmegaFromCorrelations(t.cor(a.Items))
	}
	return r
}

// ChoiceReliability is the ScaleReliability of people's answers by option on some items of a questionnaire:
// choice[r][it] is the option index person r chose on item it (-1: none), items the scale's items, score[j][k]
// the score of option k of items[j] (Missing: that option counts as no answer on this scale), and keep says
// which people the matrix holds (a group of a human reference). Row r of the matrix is a kept person's score on
// each of items.
func ChoiceReliability(choice [][]int16, items []int, score [][]float64, keep func(r int) bool) Reliability {
	return ChoiceReliabilityWeighted(choice, items, score, keep, nil)
}

// ChoiceReliabilityWeighted is ChoiceReliability with person r weighted weight[r] (indexed like choice; nil:
// unweighted): the ScaleReliabilityWeighted of the kept people's matrix with their weights.
func ChoiceReliabilityWeighted(choice [][]int16, items []int, score [][]float64, keep func(r int) bool, weight []float64) Reliability {
	if weight != nil && len(weight) != len(choice) {
		err := fmt.Errorf("%w: %d weights for %d people", ErrWeights, len(weight), len(choice))
		return Reliability{Err: err, Omega: math.NaN(), OmegaErr: err}
	}
	var x [][]float64
	var w []float64
	for r := range choice {
		if !keep(r) {
			continue
		}
		if weight != nil {
			w = append(w, weight[r])
		}
		row := make([]float64, len(items))
		for j, it := range items {
			row[j] = Missing
			if k := choice[r][it]; k >= 0 {
				row[j] = score[j][k]
			}
		}
		x = append(x, row)
	}
	return ScaleReliabilityWeighted(x, w)
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
