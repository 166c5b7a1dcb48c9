package psychometrics

import "math"

// Missing marks a missing answer in a data matrix: an unparsed or failed answer, or an option ignored for scale.
// Missing answers are left out, never counted as zero.
var Missing = math.NaN()

// IsMissing reports whether v is Missing.
func IsMissing(v float64) bool { return math.IsNaN(v) }

// pairwiseCov is R's cov(x, use = "pairwise"): entry (i, j) is the sample covariance (n - 1 denominator) of
// columns i and j over the rows where both are present, each column centred on its mean over those rows.
// Fewer than two such rows give NaN, as R gives NA.
func pairwiseCov(x [][]float64, cols int) [][]float64 {
	c := square(cols)
	for i := range cols {
		for j := i; j < cols; j++ {
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
			v := math.NaN()
			if n >= 2 {
				mi, mj := si/float64(n), sj/float64(n)
				var s float64
				for _, row := range x {
					if IsMissing(row[i]) || IsMissing(row[j]) {
						continue
					}
					s += (row[i] - mi) * (row[j] - mj)
				}
				v = s / float64(n-1)
			}
			c[i][j], c[j][i] = v, v
		}
	}
	return c
}

// pairwiseCor is R's cor(x, use = "pairwise"): the correlation of columns i and j over the rows where both are
// present, so each entry uses the standard deviations of those rows (unlike cov2cor of pairwiseCov, which
// divides by each column's own standard deviation).
func pairwiseCor(x [][]float64, cols int) [][]float64 {
	r := square(cols)
	for i := range cols {
		for j := i; j < cols; j++ {
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
			v := math.NaN()
			if n >= 2 {
				mi, mj := si/float64(n), sj/float64(n)
				var sxy, sxx, syy float64
				for _, row := range x {
					if IsMissing(row[i]) || IsMissing(row[j]) {
						continue
					}
					dx, dy := row[i]-mi, row[j]-mj
					sxy += dx * dy
					sxx += dx * dx
					syy += dy * dy
				}
				v = sxy / math.Sqrt(sxx*syy)
			}
			if i == j && !math.IsNaN(v) {
				v = 1
			}
			r[i][j], r[j][i] = v, v
		}
	}
	return r
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
