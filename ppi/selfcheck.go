package ppi

import (
	"fmt"
	"math"

	"github.com/silicolab/silico/bootstrap"
	"gonum.org/v1/gonum/stat"
)

// The self-check of the mixed subjects design. When every one of M people has both a human answer and a twin
// answer, the design can be played out on them with a known truth: draw n of them at random as the labeled
// set, hold out the human answers of the other N = M − n (their twins' answers are the unlabeled set), estimate,
// and compare with the mean of all M human answers, repeated over many draws.
//
// That truth is the mean of these M people, not of an infinite population, and the labeled set is drawn
// without replacement from them: the error θ̂ − Ȳ_M has variance smaller than the estimate's own (iid)
// variance by σ²/M. (With Ȳ_M the full mean and the unlabeled mean (M·f̄_M − n·f̄_n)/N, θ̂ − Ȳ_M =
// (Ȳ_n − Ȳ_M) − λ·(M/N)·(f̄_n − f̄_M), whose variance under simple random sampling is
// (1/n − 1/M)·S²(Y − λMf/N); expanded, that is the iid variance Var(Y − λf)/n + λ²·Var(f)/N less S²_Y/M.)
// So each draw's intervals, PPI++ and humans-only alike, use the variance less s²_Y/M (s²_Y the labeled
// humans' sample variance; at least 0): the finite-population correction. Without it the intervals cover the
// full-sample mean more often than 95 % (on psych's bfi, 99.5 % for a high ρ and a large n/M).

// Draw is one draw of the self-check.
type Draw struct {
	// Estimate is the draw's estimate with its iid intervals, as Mean returns it.
	Estimate Estimate
	// PPI and Humans are the PPI++ and humans-only intervals with the finite-population correction.
	PPI, Humans Interval
}

// Check is the outcome of the self-check over all draws.
type Check struct {
	// People is M, Truth the mean of their M human answers.
	People int
	Truth  float64
	// PPICoverage and HumansCoverage are the shares of the draws whose corrected interval covers Truth.
	PPICoverage, HumansCoverage float64
	// PPIWidth and HumansWidth are the mean widths (Hi − Lo) of the corrected intervals.
	PPIWidth, HumansWidth float64
	// PPIBias is the mean of θ̂ − Truth over the draws (0 in expectation); ModelOnlyBias is the model-only
	// estimate's bias, the mean of the M twin answers minus Truth (the same in every draw: the labeled and
	// unlabeled sets together are all M people).
	PPIBias, ModelOnlyBias float64
	// MeanNEff is the mean of the draws' n_eff over the draws that define it (NaN if none does).
	MeanNEff float64
	// Draws are the draws in order.
	Draws []Draw
}

// Labeled returns the labeled sets of a self-check: draws subsets of n of the m people (indices in increasing
// order), drawn by bootstrap.Subsetter under seed and key, so that draw b is a pure function of (seed, key, m,
// n, b). Give every item of one run the same key and m, and each draw asks the same people every item.
func Labeled(seed int64, key string, m, n, draws int) [][]int {
	s := bootstrap.NewSubsetter(seed, key, m, n)
	out := make([][]int, draws)
	for b := range out {
		out[b] = s.Next()
	}
	return out
}

// SelfCheck plays the mixed subjects design out on M people with human answers y and twin answers f (same
// length, same order): for each draw, the people whose indices it lists (distinct, within range) are the
// labeled set and the rest the unlabeled one. It returns the coverage of the corrected intervals and the rest
// of Check.
func SelfCheck(y, f []float64, draws [][]int) (Check, error) {
	if len(y) != len(f) {
		return Check{}, fmt.Errorf("ppi: %d human answers but %d twin answers", len(y), len(f))
	}
	if len(draws) == 0 {
		return Check{}, fmt.Errorf("ppi: a self-check needs at least one draw")
	}
	m := len(y)
	c := Check{People: m, Truth: stat.Mean(y, nil), Draws: make([]Draw, len(draws))}
	c.ModelOnlyBias = stat.Mean(f, nil) - c.Truth
	var nEff float64
	var nEffs int
	labeled := make([]bool, m)
	for b, idx := range draws {
		clear(labeled)
		for _, i := range idx {
			if i < 0 || i >= m || labeled[i] {
				return Check{}, fmt.Errorf("ppi: draw %d lists person %d twice or out of range 0 … %d", b, i, m-1)
			}
			labeled[i] = true
		}
		var yl, fl, fu []float64
		for i := range y {
			if labeled[i] {
				yl, fl = append(yl, y[i]), append(fl, f[i])
			} else {
				fu = append(fu, f[i])
			}
		}
		e, err := Mean(yl, fl, fu)
		if err != nil {
			return Check{}, fmt.Errorf("draw %d: %w", b, err)
		}
		fpc := e.Humans.Variance * float64(e.Labeled) / float64(m)
		d := Draw{
			Estimate: e,
			PPI:      normal(e.PPI.Estimate, max(e.PPI.Variance-fpc, 0)),
			Humans:   normal(e.Humans.Estimate, max(e.Humans.Variance-fpc, 0)),
		}
		c.Draws[b] = d
		if d.PPI.Covers(c.Truth) {
			c.PPICoverage++
		}
		if d.Humans.Covers(c.Truth) {
			c.HumansCoverage++
		}
		c.PPIWidth += d.PPI.Width()
		c.HumansWidth += d.Humans.Width()
		c.PPIBias += e.PPI.Estimate - c.Truth
		if !math.IsNaN(e.NEff) {
			nEff += e.NEff
			nEffs++
		}
	}
	r := float64(len(draws))
	c.PPICoverage /= r
	c.HumansCoverage /= r
	c.PPIWidth /= r
	c.HumansWidth /= r
	c.PPIBias /= r
	c.MeanNEff = nEff / float64(nEffs)
	return c, nil
}
