package design

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// Terms are the factors of the variance decomposition, in the order their sequential sums of squares are taken:
// the order of R's anova(lm(score ~ persona + item + variant + prompt_variant + order + seed)).
var Terms = []string{"persona", "item", "variant", "prompt_variant", "order", "seed"}

type scaleKey struct{ model, scale string }

// varianceAcc holds the sufficient statistics of the least-squares fit of one model × scale: X'X and X'y of the
// treatment-coded design are sums of counts and scores per level and per pair of levels, so no cell is kept.
type varianceAcc struct {
	n           int
	sumY, sumY2 float64
	levels      [6]map[string]int // term → level → index in order of first appearance
	count       [6][]int          // term → level index → cells
	sum         [6][]float64      // term → level index → Σ score
	pair        [6][6]map[[2]int]int
}

func (a *Accumulator) addVariance(o *Observation) {
	k := scaleKey{o.Model, o.Scale}
	v := a.variance[k]
	if v == nil {
		v = &varianceAcc{}
		for t := range v.levels {
			v.levels[t] = map[string]int{}
			for u := t + 1; u < len(Terms); u++ {
				v.pair[t][u] = map[[2]int]int{}
			}
		}
		a.variance[k] = v
	}
	lv := [6]string{o.Persona, o.Item, o.Variant, o.PromptVariant, o.Order, strconv.FormatInt(o.Seed, 10)}
	var idx [6]int
	for t, l := range lv {
		i, ok := v.levels[t][l]
		if !ok {
			i = len(v.count[t])
			v.levels[t][l] = i
			v.count[t] = append(v.count[t], 0)
			v.sum[t] = append(v.sum[t], 0)
		}
		idx[t] = i
		v.count[t][i]++
		v.sum[t][i] += o.Score
	}
	for t := range idx {
		for u := t + 1; u < len(idx); u++ {
			v.pair[t][u][[2]int{idx[t], idx[u]}]++
		}
	}
	v.n++
	v.sumY += o.Score
	v.sumY2 += o.Score * o.Score
}

// TermSS is one term's line of the decomposition. A term with one level explains nothing and has DF 0, SS 0.
type TermSS struct {
	Levels int
	DF     int
	SS     float64
	// Share is SS over the total (corrected) sum of squares; nil when that is 0.
	Share *float64
}

// VarianceRow is one line of variance.csv: a model × scale.
type VarianceRow struct {
	Model, Scale string
	N            int
	// Balanced says every pair of terms with more than one level is crossed with equal counts, so the sums of
	// squares do not depend on the term order; otherwise they are sequential (type I) in the order of Terms.
	Balanced bool
	Terms    [6]TermSS // in the order of Terms
	Residual TermSS
	TotalSS  float64
}

// Variance returns the rows of variance.csv, per model and scale in sorted order.
func (a *Accumulator) Variance() ([]VarianceRow, error) {
	keys := make([]scaleKey, 0, len(a.variance))
	for k := range a.variance {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y scaleKey) int {
		return cmp.Or(cmp.Compare(x.model, y.model), cmp.Compare(x.scale, y.scale))
	})
	rows := make([]VarianceRow, 0, len(keys))
	for _, k := range keys {
		r, err := a.variance[k].row()
		if err != nil {
			return nil, fmt.Errorf("variance of model %s, scale %s: %w", k.model, k.scale, err)
		}
		r.Model, r.Scale = k.model, k.scale
		rows = append(rows, r)
	}
	return rows, nil
}

// row fits the nested models intercept, + persona, + item, … by least squares on X'X and X'y and takes each
// term's sum of squares as the fitted sum of squares it adds, its df as the rank it adds (columns aliased with
// earlier terms add nothing, as in R's pivoting lm).
func (v *varianceAcc) row() (VarianceRow, error) {
	r := VarianceRow{N: v.n}
	// Columns: the intercept, then per term with ≥ 2 levels a dummy for every level but the first.
	type col struct{ term, level int }
	cols := []col{{-1, -1}}
	end := [6]int{} // end[t]: columns of terms up to t
	for t := range Terms {
		r.Terms[t].Levels = len(v.count[t])
		for l := 1; l < len(v.count[t]); l++ {
			cols = append(cols, col{t, l})
		}
		end[t] = len(cols)
	}
	p := len(cols)
	xtx := mat.NewSymDense(p, nil)
	xty := make([]float64, p)
	cell := func(c col) (int, float64) { // X'X with the intercept, X'y
		if c.term < 0 {
			return v.n, v.sumY
		}
		return v.count[c.term][c.level], v.sum[c.term][c.level]
	}
	for i, ci := range cols {
		n, s := cell(ci)
		xty[i] = s
		xtx.SetSym(0, i, float64(n))
		for j := i; j < p; j++ {
			cj := cols[j]
			if i == 0 {
				break
			}
			var c int
			switch {
			case ci.term == cj.term && ci.level == cj.level:
				c = n
			case ci.term == cj.term:
				c = 0
			default:
				c = v.pair[ci.term][cj.term][[2]int{ci.level, cj.level}]
			}
			xtx.SetSym(i, j, float64(c))
		}
	}
	mean := v.sumY / float64(v.n)
	r.TotalSS = v.sumY2 - float64(v.n)*mean*mean
	prevFit, prevRank := float64(v.n)*mean*mean, 1
	for t := range Terms {
		fit, rank, err := projection(xtx, xty, end[t])
		if err != nil {
			return r, err
		}
		r.Terms[t].DF, r.Terms[t].SS = rank-prevRank, fit-prevFit
		prevFit, prevRank = fit, rank
	}
	r.Residual = TermSS{DF: v.n - prevRank, SS: v.sumY2 - prevFit}
	for t := range r.Terms {
		r.Terms[t].Share = share(r.Terms[t].SS, r.TotalSS)
	}
	r.Residual.Share = share(r.Residual.SS, r.TotalSS)
	r.Balanced = v.balanced()
	return r, nil
}

// projection returns c'A⁺c and the rank of A for the leading m×m block A of xtx and the first m entries c of
// xty: the fitted sum of squares of the least-squares fit on the first m columns. Eigenvalues below 1e-10 of
// the largest count as zero (aliased columns).
func projection(xtx *mat.SymDense, xty []float64, m int) (float64, int, error) {
	a := mat.NewSymDense(m, nil)
	for i := range m {
		for j := i; j < m; j++ {
			a.SetSym(i, j, xtx.At(i, j))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(a, true) {
		return 0, 0, fmt.Errorf("eigen decomposition of the %d×%d cross-product matrix failed", m, m)
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	c := mat.NewVecDense(m, xty[:m])
	tol := 1e-10 * slices.Max(vals)
	fit, rank := 0.0, 0
	for k, l := range vals {
		if l <= tol {
			continue
		}
		rank++
		d := mat.Dot(vecs.ColView(k), c)
		fit += d * d / l
	}
	return fit, rank, nil
}

// balanced reports whether every level of every term with ≥ 2 levels has the same count and every pair of such
// terms has each of its level pairs n/(L_t·L_u) times.
func (v *varianceAcc) balanced() bool {
	for t := range Terms {
		if len(v.count[t]) < 2 {
			continue
		}
		for _, c := range v.count[t] {
			if c*len(v.count[t]) != v.n {
				return false
			}
		}
		for u := t + 1; u < len(Terms); u++ {
			lt, lu := len(v.count[t]), len(v.count[u])
			if lu < 2 {
				continue
			}
			if len(v.pair[t][u]) != lt*lu {
				return false
			}
			for _, c := range v.pair[t][u] {
				if c*lt*lu != v.n {
					return false
				}
			}
		}
	}
	return true
}

func share(ss, total float64) *float64 {
	if total <= 0 {
		return nil
	}
	return ptr(ss / total)
}
