package design

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// nTerms is the number of factors of the variance decomposition.
const nTerms = 6

// Terms returns the factors of the variance decomposition in the order their sequential sums of squares are
// taken: the order of R's anova(lm(score ~ persona + item + variant + prompt_variant + order + seed)).
func Terms() []string {
	return []string{"persona", "item", "variant", "prompt_variant", "order", "seed"}
}

type scaleKey struct{ model, scale string }

// varianceAcc holds the sufficient statistics of the least-squares fit of one model × scale: X'X and X'y of the
// treatment-coded design are sums of counts and scores per level and per pair of levels, so no cell is kept.
type varianceAcc struct {
	n int
	// shift is the first score seen; the sums are of score − shift, so Σy² does not dwarf the sums of squares.
	shift       float64
	sumY, sumY2 float64
	levels      [nTerms]map[string]int // term → level → index in order of first appearance
	count       [nTerms][]int          // term → level index → cells
	sum         [nTerms][]float64      // term → level index → Σ (score − shift)
	pair        [nTerms][nTerms]map[[2]int]int
}

func (a *Accumulator) addVariance(o *Observation) {
	k := scaleKey{o.Model, o.Scale}
	v := a.variance[k]
	if v == nil {
		v = &varianceAcc{}
		for t := range v.levels {
			v.levels[t] = map[string]int{}
			for u := t + 1; u < nTerms; u++ {
				v.pair[t][u] = map[[2]int]int{}
			}
		}
		v.shift = o.Score
		a.variance[k] = v
	}
	lv := [nTerms]string{o.Persona, o.Item, o.Variant, o.PromptVariant, o.Order, strconv.FormatInt(o.Seed, 10)}
	y := o.Score - v.shift
	var idx [nTerms]int
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
		v.sum[t][i] += y
	}
	for t := range idx {
		for u := t + 1; u < len(idx); u++ {
			v.pair[t][u][[2]int{idx[t], idx[u]}]++
		}
	}
	v.n++
	v.sumY += y
	v.sumY2 += y * y
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
	// squares do not depend on the term order; otherwise they are sequential (type I) in the order of Terms().
	Balanced bool
	Terms    [nTerms]TermSS // in the order of Terms()
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

// row fits the nested models intercept, + persona, + item, … by least squares on X'X and X'y. A Cholesky
// factorisation L L' = X'X taken column by column in the order of the terms is Gram–Schmidt on the columns of X:
// z = L⁻¹ X'y holds the coordinates of y along the orthogonalised columns, so z_j² is the fitted sum of squares
// column j adds after every column before it, and a term's sequential (type I) ss is the sum over its columns.
// A column whose pivot vanishes (aliased with earlier columns, as when a level pair is never observed) adds
// nothing and no df, as R's lm drops it.
func (v *varianceAcc) row() (VarianceRow, error) {
	r := VarianceRow{N: v.n}
	// Columns: the intercept, then per term with ≥ 2 levels a dummy for every level but the first.
	type col struct{ term, level int }
	cols := []col{{-1, -1}}
	for t := range nTerms {
		r.Terms[t].Levels = len(v.count[t])
		for l := 1; l < len(v.count[t]); l++ {
			cols = append(cols, col{t, l})
		}
	}
	p := len(cols)
	xtx := mat.NewSymDense(p, nil)
	xty := make([]float64, p)
	for i, ci := range cols {
		if ci.term < 0 {
			xtx.SetSym(0, 0, float64(v.n))
			xty[0] = v.sumY
			continue
		}
		n := v.count[ci.term][ci.level]
		xtx.SetSym(0, i, float64(n))
		xtx.SetSym(i, i, float64(n))
		xty[i] = v.sum[ci.term][ci.level]
		for j := i + 1; j < p; j++ {
			if cj := cols[j]; cj.term != ci.term {
				xtx.SetSym(i, j, float64(v.pair[ci.term][cj.term][[2]int{ci.level, cj.level}]))
			}
		}
	}
	z, kept, err := sequential(xtx, xty)
	if err != nil {
		return r, err
	}
	rank := 0
	fit := 0.0
	for j, c := range cols {
		fit += z[j] * z[j]
		if !kept[j] {
			continue
		}
		rank++
		if c.term >= 0 {
			r.Terms[c.term].DF++
			r.Terms[c.term].SS += z[j] * z[j]
		}
	}
	// Scores were accumulated less the first one (shift), which changes only the intercept's share of the fit.
	r.TotalSS = v.sumY2 - z[0]*z[0]
	r.Residual = TermSS{DF: v.n - rank, SS: v.sumY2 - fit}
	for t := range r.Terms {
		r.Terms[t].Share = share(r.Terms[t].SS, r.TotalSS)
	}
	r.Residual.Share = share(r.Residual.SS, r.TotalSS)
	r.Balanced = v.balanced()
	return r, nil
}

// aliasTol is the pivot, relative to the column's own X'X diagonal, below which a column counts as a linear
// combination of the columns before it: the square of a relative residual norm of 3e-5 (R's lm uses 1e-7 on
// the norm; dummy columns are either aliased, with pivots of rounding size, or far from it).
const aliasTol = 1e-9

// sequential returns z = L⁻¹c for the Cholesky factor L of a, taken in column order, with columns whose pivot
// falls below aliasTol skipped (kept false, z 0). gonum's Cholesky refuses semidefinite matrices, which a design
// with aliased columns gives, so the factorisation is spelled out.
func sequential(a *mat.SymDense, c []float64) ([]float64, []bool, error) {
	p := len(c)
	l := make([]float64, p*p) // row-major lower triangle; rows are contiguous for the inner products
	z := make([]float64, p)
	kept := make([]bool, p)
	for j := range p {
		lj := l[j*p : j*p+j]
		d := a.At(j, j)
		for _, v := range lj {
			d -= v * v
		}
		if math.IsNaN(d) {
			return nil, nil, fmt.Errorf("cross-product matrix is not finite at column %d", j)
		}
		if a.At(j, j) <= 0 || d <= aliasTol*a.At(j, j) {
			continue
		}
		kept[j] = true
		ljj := math.Sqrt(d)
		l[j*p+j] = ljj
		for i := j + 1; i < p; i++ {
			s := a.At(i, j)
			for k, v := range l[i*p : i*p+j] {
				s -= v * lj[k]
			}
			l[i*p+j] = s / ljj
		}
		s := c[j]
		for k, v := range lj {
			s -= v * z[k]
		}
		z[j] = s / ljj
	}
	return z, kept, nil
}

// balanced reports whether every level of every term with ≥ 2 levels has the same count and every pair of such
// terms has each of its level pairs n/(L_t·L_u) times.
func (v *varianceAcc) balanced() bool {
	for t := range nTerms {
		if len(v.count[t]) < 2 {
			continue
		}
		for _, c := range v.count[t] {
			if c*len(v.count[t]) != v.n {
				return false
			}
		}
		for u := t + 1; u < nTerms; u++ {
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
