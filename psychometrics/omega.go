package psychometrics

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
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
func OmegaTotal(x [][]float64, cols []int) (float64, error) {
	if len(cols) < 2 {
		return math.NaN(), ErrTooFewItems
	}
	sel := make([][]float64, len(x))
	for r, row := range x {
		sel[r] = make([]float64, len(cols))
		for k, c := range cols {
			sel[r][k] = row[c]
		}
	}
	r := pairwiseCor(sel, len(cols))
	for _, row := range r {
		for _, v := range row {
			if math.IsNaN(v) {
				return math.NaN(), errors.New("psychometrics: omega: a pair of items has fewer than two common answers")
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
			return nil, fmt.Errorf("psychometrics: omega: negative first eigenvalue %g", vals[top])
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
	tol := math.Sqrt(2.220446049250313e-16) * d[0]
	out := make([]float64, n)
	for i := range n {
		// diag(V diag(1/d) U')[i] = sum_k V[i,k] U[i,k] / d[k] over the kept singular values.
		var s float64
		for k := range n {
			if d[k] > tol && d[k] > 0 {
				s += v.At(i, k) * u.At(i, k) / d[k]
			}
		}
		out[i] = min(max(1-1/s, 0), 1)
	}
	return out, nil
}
