// Package ppi computes prediction-powered estimates of a population mean: the mixed subjects design, where a
// small sample of people who answered a question themselves (the labeled set) is combined with a model's
// answers for the same people (their twins) and for many more personas drawn from the same population (the
// unlabeled set). The estimate stays unbiased for the humans' mean whatever the model's bias: the labeled set
// measures the bias and subtracts it. What the model adds is precision, by as much as its answers correlate
// with the people's.
//
// Notation (every function here uses it): n labeled people, each with a human answer Yᵢ and the twin's answer
// fᵢ; N unlabeled personas, each with a model answer f̃ⱼ. For an item's mean score the answers are scores, for
// an option's share they are 0/1 (chose the option or not), for a scale they are scale scores.
//
//   - Humans alone: Ȳ, variance s²_Y/n.
//   - PPI++ (Angelopoulos, Duchi & Zrnic 2023): θ̂ = Ȳ + λ̂·(mean(f̃) − mean(f)), with the power-tuned
//     λ̂ = Cov(Y, f) / ((1 + n/N)·Var(f)), Cov on the labeled set and Var(f) over the n + N model answers f
//     and f̃ pooled, clipped to [0, 1]; variance Var(Y − λ̂f)/n + λ̂²·Var(f̃)/N.
//   - Classical PPI (Angelopoulos et al., Science 2023): the same with λ = 1.
//   - Model only: the mean of the n + N model answers, f and f̃ pooled: what a study of the model's answers
//     alone would report. It carries the model's bias and has no honest interval.
//   - The PPI correlation ρ = corr(Y, f) on the labeled set, and the effective sample size
//     n_eff = n / (1 − ρ₊²·N/(N + n)), ρ₊ = max(ρ, 0) (Broska, Howes & van Loon 2025): with the optimal λ the
//     PPI++ variance is s²_Y/n·(1 − ρ²·N/(N + n)), the variance of n_eff people asked directly. ρ₊, because λ̂
//     is clipped at 0: a model that answers against the people is not used, and then n_eff = n.
//
// Intervals are normal, estimate ± Z·√variance, Z the 97.5 % normal quantile: 95 % intervals, as the papers
// define them (the authors' ppi_py defaults to 90 %).
//
// Denominators: every variance and covariance divides by its count minus one (R's var and cov): s²_Y, Cov(Y, f)
// and Var(Y − λf) by n − 1, Var(f̃) by N − 1, the pooled Var(f) by n + N − 1. ppi_py divides the variances of
// its interval and its Cov(Y, f) by n (numpy's default) but its pooled Var(f) by n + N − 1 (np.cov), so its λ̂ is
// ours times (n − 1)/n and its variances ours times (n − 1)/n and (N − 1)/N: the same to within 1/n. The n − 1
// form makes the humans-only interval the textbook one, Ȳ ± Z·s_Y/√n with s_Y the sample standard deviation.
//
// Weights: the estimates are unweighted. A survey weight is a property of a respondent of the labeled set;
// the unlabeled personas are not survey respondents and carry none, so a weighted labeled set and an
// unweighted unlabeled set would describe two populations, which is exactly what PPI must not mix.
//
// Assumptions, which the numbers cannot check: the labeled people are a random sample of the population the
// estimate is about, and the unlabeled personas are drawn from the same population (the same distribution of
// whatever the model is told about them). Under them the estimate is unbiased; the interval's coverage is
// asymptotic (large n and N), and with small n a tuned λ̂ estimated from the same data can leave the interval
// narrower than it should be: see WeakCorrelation.
package ppi

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Z is the 97.5 % quantile of the standard normal distribution (R's qnorm(0.975)): a 95 % normal interval is
// the estimate ± Z standard errors.
const Z = 1.959963984540054

// MinLabeled is the number of labeled people below which an estimate is flagged FewLabeled.
const MinLabeled = 10

// ErrTooFew is returned (wrapped) when a set has fewer than two answers: no variance, no interval.
var ErrTooFew = errors.New("ppi: a variance needs at least two answers")

// Interval is a point estimate with its variance and 95 % normal interval.
type Interval struct {
	Estimate float64
	// Variance is the estimated variance of Estimate.
	Variance float64
	// Lo and Hi are Estimate ∓ Z·√Variance.
	Lo, Hi float64
}

// normal returns the interval of estimate with variance v.
func normal(estimate, v float64) Interval {
	h := Z * math.Sqrt(v)
	return Interval{Estimate: estimate, Variance: v, Lo: estimate - h, Hi: estimate + h}
}

// Width is Hi − Lo.
func (iv Interval) Width() float64 { return iv.Hi - iv.Lo }

// Covers says whether Lo ≤ x ≤ Hi.
func (iv Interval) Covers(x float64) bool { return iv.Lo <= x && x <= iv.Hi }

// Flags are the cautions an estimate carries; several can be set at once.
type Flags uint

const (
	// FewLabeled: fewer than MinLabeled labeled people.
	FewLabeled Flags = 1 << iota
	// WeakCorrelation: ρ is undefined or below 1/√(n − 2). "Never worse than humans alone" is asymptotic; at
	// small n a correlation this weak is indistinguishable from none (Mani et al. 2025), and a λ̂ tuned on
	// noise makes the interval too narrow.
	WeakCorrelation
	// ConstantHumans: every labeled person gave the same answer (for an option's share: nobody, or everybody,
	// chose it). The humans' variance is 0, and so is the width of both intervals: a zero-width interval is
	// no certainty, only too few people to see any spread.
	ConstantHumans
	// ConstantModel: the n + N model answers are all the same, so Var(f) = 0 and λ̂ is set to 0 (the model
	// carries no information); PPI++ is then the humans-only estimate.
	ConstantModel
	// LambdaClipped: the tuned λ̂ fell outside [0, 1] and was clipped. Below 0 the model answers against the
	// people and is not used; above 1 its answers vary less than the people's, and the interval is wider than
	// n_eff predicts.
	LambdaClipped
)

// Notes are the flags in words, in the order of their declaration.
func (f Flags) Notes() []string {
	var out []string
	for _, c := range []struct {
		flag Flags
		text string
	}{
		{FewLabeled, fmt.Sprintf("fewer than %d labeled people", MinLabeled)},
		{WeakCorrelation, "the PPI correlation is undefined or below 1/√(n − 2): at this n the model's answers may not make the interval honestly narrower"},
		{ConstantHumans, "every labeled person gave the same answer: the interval has zero width, which is no certainty"},
		{ConstantModel, "every model answer is the same: λ is 0 and the estimate is the humans' alone"},
		{LambdaClipped, "the tuned λ fell outside [0, 1] and was clipped"},
	} {
		if f&c.flag != 0 {
			out = append(out, c.text)
		}
	}
	return out
}

// Estimate is the mixed subjects estimate of one mean.
type Estimate struct {
	// Labeled is n, Unlabeled N.
	Labeled, Unlabeled int
	// Humans is Ȳ with variance s²_Y/n: the labeled people alone.
	Humans Interval
	// PPI is the PPI++ estimate with the tuned λ (Lambda).
	PPI Interval
	// Classical is the PPI estimate with λ = 1.
	Classical Interval
	// ModelOnly is the mean of the n + N model answers, f and f̃ pooled.
	ModelOnly float64
	// Lambda is the tuned λ̂ clipped to [0, 1]; LambdaRaw the value before clipping (NaN with ConstantModel).
	Lambda, LambdaRaw float64
	// Rho is the PPI correlation corr(Y, f) on the labeled set; NaN when Y or f is constant there.
	Rho float64
	// NEff is n / (1 − max(ρ, 0)²·N/(N + n)); NaN where Rho is.
	NEff float64
	// Flags are the estimate's cautions.
	Flags Flags
}

// Mean returns the mixed subjects estimate of a mean from the labeled humans' answers y, their twins' answers
// f (same length, same order) and the unlabeled model answers fu. Each set needs at least two answers (an
// error wrapping ErrTooFew otherwise); a value that is not finite is an error.
func Mean(y, f, fu []float64) (Estimate, error) {
	if len(y) != len(f) {
		return Estimate{}, fmt.Errorf("ppi: %d human answers but %d twin answers", len(y), len(f))
	}
	n, nu := len(y), len(fu)
	if n < 2 || nu < 2 {
		return Estimate{}, fmt.Errorf("%w: %d labeled, %d unlabeled", ErrTooFew, n, nu)
	}
	for _, set := range []struct {
		name string
		x    []float64
	}{{"human", y}, {"twin", f}, {"unlabeled model", fu}} {
		for i, v := range set.x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Estimate{}, fmt.Errorf("ppi: %s answer %d is %v", set.name, i, v)
			}
		}
	}
	pooled := slices.Concat(f, fu)
	e := Estimate{Labeled: n, Unlabeled: nu, ModelOnly: stat.Mean(pooled, nil)}
	fn, nn := float64(n), float64(nu)
	meanY, meanF, meanFU := stat.Mean(y, nil), stat.Mean(f, nil), stat.Mean(fu, nil)
	varY, varF, varFU := variance(y), variance(f), variance(fu)
	if varY == 0 {
		e.Flags |= ConstantHumans
	}
	e.Humans = normal(meanY, varY/fn)

	// With Y or f constant the covariance is 0; computed, it would be the rounding of their means.
	var cov float64
	e.Rho, e.NEff = math.NaN(), math.NaN()
	if varY > 0 && varF > 0 {
		cov = stat.Covariance(y, f, nil)
		e.Rho = cov / math.Sqrt(varY*varF)
		rho := max(e.Rho, 0)
		e.NEff = fn / (1 - rho*rho*nn/(nn+fn))
	}
	if math.IsNaN(e.Rho) || n <= 2 || e.Rho < 1/math.Sqrt(fn-2) {
		e.Flags |= WeakCorrelation
	}
	if n < MinLabeled {
		e.Flags |= FewLabeled
	}

	e.LambdaRaw = math.NaN()
	if varPooled := variance(pooled); varPooled == 0 {
		e.Flags |= ConstantModel
	} else {
		e.LambdaRaw = cov / ((1 + fn/nn) * varPooled)
		e.Lambda = min(max(e.LambdaRaw, 0), 1)
		if e.Lambda != e.LambdaRaw {
			e.Flags |= LambdaClipped
		}
	}
	at := func(lambda float64) Interval {
		resid := make([]float64, n)
		for i := range y {
			resid[i] = y[i] - lambda*f[i]
		}
		return normal(meanY+lambda*(meanFU-meanF), variance(resid)/fn+lambda*lambda*varFU/nn)
	}
	e.PPI = at(e.Lambda)
	e.Classical = at(1)
	return e, nil
}

// variance is the sample variance of x (denominator len(x) − 1), exactly 0 when every value of x is the same
// (computed, it would be the rounding of their mean).
func variance(x []float64) float64 {
	for _, v := range x[1:] {
		if v != x[0] {
			return stat.Variance(x, nil)
		}
	}
	return 0
}

// Shares returns the mixed subjects estimate of each option's share, options 0 … k−1: Mean on the 0/1
// indicators of the option, for the labeled humans' answers y, their twins' answers f and the unlabeled model
// answers fu (option indices). Each option has its own λ̂, tuned for its own share (ppi_py's default tunes
// one λ for all options together); so the shares' estimates need not sum to 1, and a share's estimate can
// fall outside [0, 1] when the model's and the people's shares differ much. An option nobody (or everybody) of
// the labeled people chose is flagged ConstantHumans: its interval has zero width.
func Shares(y, f, fu []int, k int) ([]Estimate, error) {
	for _, set := range [][]int{y, f, fu} {
		for i, v := range set {
			if v < 0 || v >= k {
				return nil, fmt.Errorf("ppi: answer %d is option %d of %d", i, v, k)
			}
		}
	}
	out := make([]Estimate, k)
	for opt := range k {
		var err error
		out[opt], err = Mean(indicator(y, opt), indicator(f, opt), indicator(fu, opt))
		if err != nil {
			return nil, fmt.Errorf("option %d: %w", opt, err)
		}
	}
	return out, nil
}

// indicator is 1 where x is opt, 0 elsewhere.
func indicator(x []int, opt int) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		if v == opt {
			out[i] = 1
		}
	}
	return out
}

// Difference is the estimate of a difference between two groups or arms, a − b.
type Difference struct {
	// Humans, PPI and Classical are the differences of the two estimates, their variances added.
	Humans, PPI, Classical Interval
	// ModelOnly is the difference of the model-only estimates.
	ModelOnly float64
	// Flags are the flags of either estimate.
	Flags Flags
}

// Diff returns the difference a − b of two estimates made on disjoint sets of people (labeled and unlabeled
// both split by group), so that they are independent and the variance of the difference is the sum of the
// variances.
func Diff(a, b Estimate) Difference {
	sub := func(x, y Interval) Interval { return normal(x.Estimate-y.Estimate, x.Variance+y.Variance) }
	return Difference{
		Humans:    sub(a.Humans, b.Humans),
		PPI:       sub(a.PPI, b.PPI),
		Classical: sub(a.Classical, b.Classical),
		ModelOnly: a.ModelOnly - b.ModelOnly,
		Flags:     a.Flags | b.Flags,
	}
}
