package psychometrics

import (
	"errors"
	"fmt"
	"math"
)

// Missing marks a missing answer in a data matrix: an unparsed or failed answer, or an option ignored for scale.
// Missing answers are left out, never counted as zero.
var Missing = math.NaN()

// IsMissing reports whether v is Missing.
func IsMissing(v float64) bool { return math.IsNaN(v) }

// pairSums are the sums over the rows where columns i and j are both present (and, with weights, whose weight
// is positive): their count, the sum of their weights and of the squared weights, and the weighted cross
// products of the deviations from the two columns' weighted means over those rows. Without weights every row
// weighs 1.
type pairSums struct {
	n             int
	w, w2         float64
	sxy, sxx, syy float64
}

func pairwise(x [][]float64, w []float64, i, j int) pairSums {
	var si, sj float64
	var p pairSums
	for r, row := range x {
		if IsMissing(row[i]) || IsMissing(row[j]) {
			continue
		}
		wr := 1.0
		if w != nil {
			if wr = w[r]; wr == 0 {
				continue
			}
		}
		si += wr * row[i]
		sj += wr * row[j]
		p.w += wr
		p.w2 += wr * wr
		p.n++
	}
	if p.n == 0 {
		return p
	}
	mi, mj := si/p.w, sj/p.w
	for r, row := range x {
		if IsMissing(row[i]) || IsMissing(row[j]) {
			continue
		}
		wr := 1.0
		if w != nil {
			if wr = w[r]; wr == 0 {
				continue
			}
		}
		dx, dy := row[i]-mi, row[j]-mj
		p.sxy += wr * dx * dy
		p.sxx += wr * dx * dx
		p.syy += wr * dy * dy
	}
	return p
}

// divisor is the denominator of the unbiased weighted covariance, Σw − Σw²/Σw: R's cov.wt(method = "unbiased")
// divides the weighted cross products by 1 − Σv² with v = w/Σw normalised, which is the same, and with unit
// weights it is n − 1 exactly.
func (p pairSums) divisor() float64 { return p.w - p.w2/p.w }

// ErrWeights is returned for weights that are not one finite, non-negative number per row of the data matrix.
var ErrWeights = errors.New("psychometrics: the weights are not one finite number of 0 or more per respondent")

// checkWeights reports whether w is nil (no weights) or one finite, non-negative weight per row of x.
func checkWeights(x [][]float64, w []float64) error {
	if w == nil {
		return nil
	}
	if len(w) != len(x) {
		return fmt.Errorf("%w: %d weights for %d respondents", ErrWeights, len(w), len(x))
	}
	for r, v := range w {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: respondent %d weighs %v", ErrWeights, r, v)
		}
	}
	return nil
}

// Covariances is the item covariance matrix of x (rows: respondents, columns: items, Missing for a missing
// answer) with respondent r weighted w[r] (nil: every respondent weighs 1), pairwise: entry (i, j) is over the
// respondents who answered both items and weigh more than 0, each column centred on its weighted mean over
// them, the weights normalised within the pair, and the cross products divided by 1 − Σv² (v the normalised
// weights; R's cov.wt(method = "unbiased") on the pair's complete rows). With unit weights this is R's
// cov(x, use = "pairwise") with its n − 1 divisor; on a matrix without missing answers it is
// cov.wt(x, w, method = "unbiased")$cov. Fewer than two such respondents give NaN, as R gives NA. Weights
// scale freely: w and 2w give the same matrix.
func Covariances(x [][]float64, w []float64) ([][]float64, error) {
	if err := checkWeights(x, w); err != nil {
		return nil, err
	}
	return newPairTable(x, w, allColumns(x)).cov(nil), nil
}

// Correlations is the item correlation matrix of x weighted as Covariances is, pairwise: entry (i, j) is the
// weighted correlation over the respondents who answered both items, Σv·dx·dy / √(Σv·dx² · Σv·dy²) with the
// deviations from that pair's weighted means (the divisor cancels). With unit weights this is R's
// cor(x, use = "pairwise"); on a matrix without missing answers cov.wt(x, w, cor = TRUE)$cor. The diagonal is
// exactly 1 where the item has variance, NaN otherwise.
func Correlations(x [][]float64, w []float64) ([][]float64, error) {
	if err := checkWeights(x, w); err != nil {
		return nil, err
	}
	return newPairTable(x, w, allColumns(x)).cor(nil), nil
}

// allColumns lists the columns of x: 0 … len(x[0])−1.
func allColumns(x [][]float64) []int {
	if len(x) == 0 {
		return nil
	}
	cols := make([]int, len(x[0]))
	for c := range cols {
		cols[c] = c
	}
	return cols
}

// pairTable holds the pairSums of every pair of some columns of a data matrix, so that the covariances, the
// correlations and the column variances of one matrix come from one pass per pair. Entry [a][b], a <= b, is
// the pair of the table's columns a and b (positions in the cols it was built from).
type pairTable [][]pairSums

func newPairTable(x [][]float64, w []float64, cols []int) pairTable {
	t := make(pairTable, len(cols))
	for a, i := range cols {
		t[a] = make([]pairSums, len(cols))
		for b := a; b < len(cols); b++ {
			t[a][b] = pairwise(x, w, i, cols[b])
		}
	}
	return t
}

func (t pairTable) at(a, b int) pairSums {
	if a > b {
		a, b = b, a
	}
	return t[a][b]
}

// variance is the (weighted) sample variance of the table's column a over its present values, NaN with fewer
// than two.
func (t pairTable) variance(a int) float64 {
	p := t.at(a, a)
	if p.n < 2 {
		return math.NaN()
	}
	return p.sxx / p.divisor()
}

// cov is the covariance matrix of the table's columns idx (nil: all), NaN where fewer than two rows share a
// pair.
func (t pairTable) cov(idx []int) [][]float64 {
	return t.matrix(idx, func(a, b int) float64 {
		p := t.at(a, b)
		if p.n < 2 {
			return math.NaN()
		}
		return p.sxy / p.divisor()
	})
}

// cor is the correlation matrix of the table's columns idx (nil: all). Each entry uses the standard deviations
// of the pair's rows (unlike cov2cor of cov, which divides by each column's own standard deviation).
func (t pairTable) cor(idx []int) [][]float64 {
	return t.matrix(idx, func(a, b int) float64 {
		p := t.at(a, b)
		switch {
		case p.n < 2:
			return math.NaN()
		case a == b:
			if p.sxx == 0 {
				return math.NaN()
			}
			return 1
		}
		return p.sxy / math.Sqrt(p.sxx*p.syy)
	})
}

func (t pairTable) matrix(idx []int, f func(a, b int) float64) [][]float64 {
	if idx == nil {
		idx = make([]int, len(t))
		for a := range idx {
			idx[a] = a
		}
	}
	return symmetric(len(idx), func(i, j int) float64 { return f(idx[i], idx[j]) })
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
