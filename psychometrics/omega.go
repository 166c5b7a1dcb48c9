package psychometrics

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// The reasons OmegaTotal gives no number. Their text is what reliability.csv and reference_scales.csv write in
// their note column (after "psychometrics: ").
var (
	ErrTooFewCommon = errors.New("psychometrics: a pair of items has fewer than two common answers")
	ErrNoStart      = errors.New("psychometrics: the squared multiple correlations sum to 0.001 or less (singular correlation matrix), where psych's principal-axis fit stops")
	ErrSMCRounding  = errors.New("psychometrics: a diagonal entry of the correlation matrix's pseudo-inverse is zero to rounding, so its squared multiple correlation (0 or 1) and psych's result are decided by rounding error")
	ErrImaginary    = errors.New("psychometrics: the principal-axis fit met a negative first eigenvalue, where psych stops")
)

// Principal-axis settings of psych's fa(): it stops when the summed communalities change by less than minErr,
// or after maxIter eigen decompositions.
const (
	paMinErr  = 0.001
	paMaxIter = 50
)

// OmegaTotal is McDonald's omega total of a scale as R psych computes it with
// omega(x, nfactors = 1, fm = "pa")$omega.tot, on the same data matrix as ComputeAlpha (Missing for a missing
// answer):
//
//   - R is cor(x, use = "pairwise"): each correlation over the respondents who answered both items, with their
//     own standard deviations;
//   - one factor is extracted by psych's principal-axis iteration (fa(R, 1, fm = "pa")): the diagonal of R
//     starts at the squared multiple correlations (psych smc: 1 - 1/diag(Pinv(R)), clamped to [0, 1]), then
//     is replaced by the communalities of the first eigenvector until their sum changes by less than 0.001
//     (at most 50 times);
//   - omega total = (Vt - sum(u2)) / Vt, u2 = 1 - loading² (psych schmid's uniquenesses for one factor) and
//     Vt the sum of R after reversing the items that load negatively (omega's default flip = TRUE; the factor
//     is first oriented so its loadings sum to zero or more, as fa() does). On a scale whose items all load
//     positively Vt = sum(R).
//
// psych's default, fm = "minres", fits the uniquenesses with R's L-BFGS-B optimiser: its result is where
// that optimiser stops, which another implementation cannot reproduce to 1e-9 short of porting it step for
// step. Principal axis is a fixed sequence of eigen decompositions and matches psych to about 1e-14. With one factor omega hierarchical is not
// defined; psych says so too.
//
// cols lists the columns of x to use; ComputeAlpha's Alpha.Items are the usual choice (psych's omega cannot
// use an item without variance either: its correlations are undefined).
//
// Where psych's omega() stops, OmegaTotal returns NaN and one of these errors (errors.Is): ErrTooFewItems,
// ErrTooFewCommon (psych: "missing values (NAs) in the correlation matrix do not allow me to continue"),
// ErrNoStart (the squared multiple correlations sum to 0.001 or less, so psych's iteration never runs and it
// stops with "object 'eigens' not found": a singular correlation matrix, e.g. fewer respondents than items)
// and ErrImaginary (psych warns "imaginary eigen value condition"). It also refuses with ErrSMCRounding where
// psych does compute a number but that number is decided by rounding error: see squaredMultipleCorrelations.
func OmegaTotal(x [][]float64, cols []int) (float64, error) { return OmegaTotalWeighted(x, nil, cols) }

// OmegaTotalWeighted is OmegaTotal with respondent r weighted w[r] (nil: OmegaTotal itself): R is
// Correlations(x, w) over cols, the weighted pairwise correlations, and omega total follows from R exactly as
// OmegaTotal's does (psych's omega(R, nfactors = 1, fm = "pa") on that correlation matrix). Invalid weights give
// ErrWeights.
func OmegaTotalWeighted(x [][]float64, w []float64, cols []int) (float64, error) {
	if err := checkWeights(x, w); err != nil {
		return math.NaN(), err
	}
	if len(cols) < 2 {
		return math.NaN(), ErrTooFewItems
	}
	return OmegaFromCorrelations(newPairTable(x, w, cols).cor(nil))
}

// OmegaFromCorrelations is omega total from a correlation matrix r, psych's
// omega(r, nfactors = 1, fm = "pa")$omega.tot, with the steps and refusals OmegaTotal describes (ErrTooFewCommon
// where an entry of r is NaN).
func OmegaFromCorrelations(r [][]float64) (float64, error) {
	if len(r) < 2 {
		return math.NaN(), ErrTooFewItems
	}
	for _, row := range r {
		for _, v := range row {
			if math.IsNaN(v) {
				return math.NaN(), ErrTooFewCommon
			}
		}
	}
	loadings, err := principalAxis1(r)
	if err != nil {
		return math.NaN(), err
	}
	// psych orients the factor so its loadings sum to zero or more (fa), then with omega's default flip = TRUE
	// reverses every item that loads negatively before summing the correlation matrix: Vt = Σ k_i k_j r_ij with
	// k_i the sign of loading i (+1 for a zero loading).
	var lsum float64
	for _, l := range loadings {
		lsum += l
	}
	key := make([]float64, len(loadings))
	for i, l := range loadings {
		if lsum < 0 {
			l = -l
		}
		key[i] = 1
		if l < 0 {
			key[i] = -1
		}
	}
	var vt, uniq float64
	for i := range r {
		for j := range r {
			vt += key[i] * key[j] * r[i][j]
		}
		uniq += r[i][i] - loadings[i]*loadings[i]
	}
	return (vt - uniq) / vt, nil
}

// OneFactorLoadings is the loadings of psych's fa(r, nfactors = 1, fm = "pa") on a correlation matrix r (no
// NaN entries): the principal-axis iteration OmegaTotal describes, the factor oriented as fa() orients it, so
// that the loadings sum to zero or more. Where the fit cannot start or meets a negative eigenvalue it returns
// OmegaTotal's errors (ErrNoStart, ErrSMCRounding, ErrImaginary); fewer than two items give ErrTooFewItems and
// a NaN entry ErrTooFewCommon.
func OneFactorLoadings(r [][]float64) ([]float64, error) {
	if len(r) < 2 {
		return nil, ErrTooFewItems
	}
	for _, row := range r {
		if len(row) != len(r) {
			return nil, fmt.Errorf("psychometrics: a correlation matrix of %d rows has a row of %d", len(r), len(row))
		}
		for _, v := range row {
			if math.IsNaN(v) {
				return nil, ErrTooFewCommon
			}
		}
	}
	l, err := principalAxis1(r)
	if err != nil {
		return nil, err
	}
	var sum float64
	for _, v := range l {
		sum += v
	}
	if sum < 0 {
		for i := range l {
			l[i] = -l[i]
		}
	}
	return l, nil
}

// principalAxis1 is psych's fa(r, nfactors = 1, fm = "pa") on a correlation matrix: the loadings of the one
// factor (their sign does not matter here).
func principalAxis1(r [][]float64) ([]float64, error) {
	n := len(r)
	smc, err := squaredMultipleCorrelations(r)
	if err != nil {
		return nil, err
	}
	work := mat.NewSymDense(n, nil)
	var comm float64
	for i := range n {
		for j := i; j < n; j++ {
			work.SetSym(i, j, r[i][j])
		}
		work.SetSym(i, i, smc[i])
		comm += smc[i]
	}
	if comm <= paMinErr {
		// psych's loop (while err > min.err, err starting at the summed communalities) never runs: fa() then
		// reads loadings it never computed and stops with an error.
		return nil, ErrNoStart
	}
	loadings := make([]float64, n)
	errSum := comm
	for iter := 1; errSum > paMinErr; iter++ {
		var eig mat.EigenSym
		if !eig.Factorize(work, true) {
			return nil, errors.New("psychometrics: omega: eigen decomposition failed")
		}
		vals := eig.Values(nil) // ascending
		var vecs mat.Dense
		eig.VectorsTo(&vecs)
		top := len(vals) - 1
		s := math.Sqrt(vals[top])
		var comm1 float64
		for i := range n {
			loadings[i] = vecs.At(i, top) * s
			comm1 += loadings[i] * loadings[i]
		}
		if math.IsNaN(comm1) {
			// psych warns "imaginary eigen value condition" and stops with these loadings.
			return nil, fmt.Errorf("%w (first eigenvalue %g)", ErrImaginary, vals[top])
		}
		for i := range n {
			work.SetSym(i, i, loadings[i]*loadings[i])
		}
		errSum = math.Abs(comm - comm1)
		comm = comm1
		if iter+1 > paMaxIter {
			break
		}
	}
	return loadings, nil
}

// squaredMultipleCorrelations is psych's smc on a correlation matrix: 1 - 1/diag(Pinv(r)), where Pinv is the
// Moore-Penrose inverse by SVD dropping singular values below sqrt(machine epsilon) times the largest; values
// above 1 are set to 1 and below 0 to 0, as psych does.
//
// On a singular or non-positive-definite matrix (pairwise correlations over different respondents) a diagonal
// entry of Pinv can be zero in exact arithmetic. Computed, it is a few units of rounding either side of zero,
// and its sign alone decides the SMC: 1 - 1/(+tiny) is clamped to 0, 1 - 1/(-tiny) to 1. psych's value then
// follows LAPACK's rounding and silico's gonum's, and the two differ (omega by up to 1e-4 on examples/bfi's
// age bands with missing answers). No port can match that, so such a matrix is refused with ErrSMCRounding: an
// entry counts as zero when its magnitude is within 64·n·ε·Σ 1/d_k of zero (d_k the kept singular values), a
// bound on the rounding error of the sum Σ_k V[i,k] U[i,k] / d_k.
func squaredMultipleCorrelations(r [][]float64) ([]float64, error) {
	n := len(r)
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			a.Set(i, j, r[i][j])
		}
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDFull) {
		return nil, errors.New("psychometrics: smc: SVD failed")
	}
	d := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	tol := math.Sqrt(epsilon) * d[0]
	var invSum float64
	for _, dk := range d {
		if dk > tol && dk > 0 {
			invSum += 1 / dk
		}
	}
	zero := 64 * float64(n) * epsilon * invSum
	out := make([]float64, n)
	for i := range n {
		// diag(V diag(1/d) U')[i] = sum_k V[i,k] U[i,k] / d[k] over the kept singular values.
		var s float64
		for k := range n {
			if d[k] > tol && d[k] > 0 {
				s += v.At(i, k) * u.At(i, k) / d[k]
			}
		}
		if math.Abs(s) <= zero {
			return nil, ErrSMCRounding
		}
		out[i] = min(max(1-1/s, 0), 1)
	}
	return out, nil
}

// epsilon is R's .Machine$double.eps, the spacing of float64 at 1.
const epsilon = 2.220446049250313e-16
