package results

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// oneFactorLoadings is psych's fa(r, nfactors = 1, fm = "pa") on a correlation matrix, oriented so the loadings
// sum to zero or more: the principal-axis fit psychometrics.OmegaTotal runs (squared multiple correlations as
// the starting communalities, iterated until their sum changes by less than 0.001, at most 50 times). It stands
// in until psychometrics exports that fit.
func oneFactorLoadings(r [][]float64) ([]float64, error) {
	n := len(r)
	if n < 2 {
		return nil, errors.New("fewer than two items")
	}
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			a.Set(i, j, r[i][j])
		}
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDFull) {
		return nil, errors.New("smc: SVD failed")
	}
	d := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	tol := math.Sqrt(2.220446049250313e-16) * d[0]
	work := mat.NewSymDense(n, nil)
	var comm float64
	for i := range n {
		var s float64
		for k := range n {
			if d[k] > tol && d[k] > 0 {
				s += v.At(i, k) * u.At(i, k) / d[k]
			}
		}
		for j := i; j < n; j++ {
			work.SetSym(i, j, r[i][j])
		}
		smc := min(max(1-1/s, 0), 1)
		work.SetSym(i, i, smc)
		comm += smc
	}
	if comm <= 0.001 {
		return nil, errors.New("the squared multiple correlations sum to 0.001 or less, where psych's principal-axis fit stops")
	}
	l := make([]float64, n)
	errSum := comm
	for iter := 1; errSum > 0.001; iter++ {
		var eig mat.EigenSym
		if !eig.Factorize(work, true) {
			return nil, errors.New("eigen decomposition failed")
		}
		vals := eig.Values(nil)
		var vecs mat.Dense
		eig.VectorsTo(&vecs)
		top := len(vals) - 1
		s := math.Sqrt(vals[top])
		var comm1 float64
		for i := range n {
			l[i] = vecs.At(i, top) * s
			comm1 += l[i] * l[i]
		}
		if math.IsNaN(comm1) {
			return nil, errors.New("the principal-axis fit met a negative first eigenvalue, where psych stops")
		}
		for i := range n {
			work.SetSym(i, i, l[i]*l[i])
		}
		errSum = math.Abs(comm - comm1)
		comm = comm1
		if iter+1 > 50 {
			break
		}
	}
	var sum float64
	for _, x := range l {
		sum += x
	}
	if sum < 0 {
		for i := range l {
			l[i] = -l[i]
		}
	}
	return l, nil
}
