package psychometrics

import "math"

// Missing marks a missing answer in a data matrix: an unparsed or failed answer, or an option ignored for scale.
// Missing answers are left out, never counted as zero.
var Missing = math.NaN()

// IsMissing reports whether v is Missing.
func IsMissing(v float64) bool { return math.IsNaN(v) }

// pairSums are the sums over the rows where columns i and j are both present: their count, and the cross
// products of the deviations from the two columns' means over those rows.
type pairSums struct {
	n             int
	sxy, sxx, syy float64
}

func pairwise(x [][]float64, i, j int) pairSums {
	var si, sj float64
	n := 0
	for _, row := range x {
		if IsMissing(row[i]) || IsMissing(row[j]) {
			continue
		}
		si += row[i]
		sj += row[j]
		n++
	}
	p := pairSums{n: n}
	if n == 0 {
		return p
	}
	mi, mj := si/float64(n), sj/float64(n)
	for _, row := range x {
		if IsMissing(row[i]) || IsMissing(row[j]) {
			continue
		}
		dx, dy := row[i]-mi, row[j]-mj
		p.sxy += dx * dy
		p.sxx += dx * dx
		p.syy += dy * dy
	}
	return p
}

// pairwiseCov is R's cov(x, use = "pairwise"): entry (i, j) is the sample covariance (n - 1 denominator) of
// columns i and j over the rows where both are present, each column centred on its mean over those rows.
// Fewer than two such rows give NaN, as R gives NA.
func pairwiseCov(x [][]float64, cols int) [][]float64 {
	return symmetric(cols, func(i, j int) float64 {
		p := pairwise(x, i, j)
		if p.n < 2 {
			return math.NaN()
		}
		return p.sxy / float64(p.n-1)
	})
}

// pairwiseCor is R's cor(x, use = "pairwise"): the correlation of columns i and j over the rows where both are
// present, so each entry uses the standard deviations of those rows (unlike cov2cor of pairwiseCov, which
// divides by each column's own standard deviation). The diagonal is exactly 1 where defined.
func pairwiseCor(x [][]float64, cols int) [][]float64 {
	return symmetric(cols, func(i, j int) float64 {
		p := pairwise(x, i, j)
		switch {
		case p.n < 2:
			return math.NaN()
		case i == j:
			if p.sxx == 0 {
				return math.NaN()
			}
			return 1
		}
		return p.sxy / math.Sqrt(p.sxx*p.syy)
	})
}

// symmetric builds the n × n symmetric matrix whose entry (i, j), i <= j, is f(i, j).
func symmetric(n int, f func(i, j int) float64) [][]float64 {
	m := square(n)
	for i := range n {
		for j := i; j < n; j++ {
			m[i][j] = f(i, j)
			m[j][i] = m[i][j]
		}
	}
	return m
}

// cov2cor is R's cov2cor: c[i][j] / sqrt(c[i][i] * c[j][j]), with an exact 1 on the diagonal.
func cov2cor(c [][]float64) [][]float64 {
	n := len(c)
	r := square(n)
	for i := range n {
		for j := range n {
			r[i][j] = c[i][j] / math.Sqrt(c[i][i]*c[j][j])
		}
		r[i][i] = 1
	}
	return r
}

// drop returns m without row and column k.
func drop(m [][]float64, k int) [][]float64 {
	n := len(m)
	out := square(n - 1)
	for i, oi := 0, 0; i < n; i++ {
		if i == k {
			continue
		}
		for j, oj := 0, 0; j < n; j++ {
			if j == k {
				continue
			}
			out[oi][oj] = m[i][j]
			oj++
		}
		oi++
	}
	return out
}

// sub returns the rows and columns idx of m.
func sub(m [][]float64, idx []int) [][]float64 {
	out := square(len(idx))
	for a, i := range idx {
		for b, j := range idx {
			out[a][b] = m[i][j]
		}
	}
	return out
}

func square(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

func sumAll(m [][]float64) float64 {
	var s float64
	for _, row := range m {
		for _, v := range row {
			s += v
		}
	}
	return s
}

func trace(m [][]float64) float64 {
	var s float64
	for i := range m {
		s += m[i][i]
	}
	return s
}
