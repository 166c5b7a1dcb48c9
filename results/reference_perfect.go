package results

import (
	"math"
	"strconv"

	"github.com/silicolab/silico/bootstrap"
	"github.com/silicolab/silico/experiment"
)

// keyPerfect is the first part of the key of the perfect model's draws (bootstrap.NewDrawer): perfect, group,
// item id, number of answers.
const keyPerfect = "perfect"

// The figures of the perfect-model floor: their positions in ReferenceRow.Perfect and, all but JSD (which
// reference_scales.csv does not average), in ReferenceScale.Perfect.
const (
	PerfectW1 = iota
	PerfectAlignment
	PerfectTVD
	PerfectSimBench
	PerfectJSD
	perfectFigures
)

// Floor is one figure of the perfect model (ReferenceRow.Perfect): Mean is its mean over the draws that
// define it, Lo and Hi the 2.5 % and 97.5 % quantiles of those draws (bootstrap.Interval); nil where no draw
// defines it or there are no draws.
type Floor struct{ Mean, Lo, Hi *float64 }

// perfectDraws are one row's figures of the perfect model on each draw, by position (PerfectW1 …); NaN where
// a draw leaves a figure undefined.
type perfectDraws [perfectFigures][]float64

// perfectKey is the key of the draws of m answers on item it of group g.
func perfectKey(s *experiment.Spec, g string, it, m int) string {
	return bootstrap.Key(keyPerfect, g, s.Questionnaire.Items[it].ID, strconv.Itoa(m))
}

// perfectModel computes the perfect model's draws of every model, group and item: out[m][gi][it], nil where
// the row has no model distribution or no humans' or there are no draws. The perfect model of a row answers m
// times, m the cells its model distribution pools (ReferenceRow.Answers.Cells), each answer drawn from the
// humans' distribution Q of the row (every option, those ignored for scale too); draw b is bootstrap.Drawer's
// b-th of (seed, perfectKey, Q, m), and its figures are the row's (comparePair) with the draw's shares in
// place of the model's. Models with the same m on a row share its draws: the floor is a property of the
// humans and of the run's size, not of a model.
func (a *Analysis) perfectModel(h *humanSide, groups []string, samples int, seed int64) [][][]*perfectDraws {
	s := a.Spec
	out := make([][][]*perfectDraws, len(s.Models))
	for m := range out {
		out[m] = make([][]*perfectDraws, len(groups))
		for gi := range groups {
			out[m][gi] = make([]*perfectDraws, len(s.Questionnaire.Items))
		}
	}
	if samples == 0 {
		return out
	}
	// Each group fills only its own slots, so the result does not depend on the order the groups finish in.
	eachParallel(len(groups), func(gi int) {
		g := groups[gi]
		for it := range s.Questionnaire.Items {
			q, _ := h.groupDist(it, g)
			if q == nil {
				continue
			}
			byM := map[int]*perfectDraws{}
			for m := range s.Models {
				n := a.GroupPMF(m, it, g).Cells
				if n == 0 {
					continue
				}
				if byM[n] == nil {
					byM[n] = drawPerfect(s, it, q, n, samples, seed, perfectKey(s, g, it, n))
				}
				out[m][gi][it] = byM[n]
			}
		}
	})
	return out
}

// drawPerfect computes the figures of samples draws of m answers from q on item it.
func drawPerfect(s *experiment.Spec, it int, q []float64, m, samples int, seed int64, key string) *perfectDraws {
	d := bootstrap.NewDrawer(seed, key, q, m)
	counts := make([]int, len(q))
	p := make([]float64, len(q))
	var out perfectDraws
	for f := range out {
		out[f] = make([]float64, samples)
	}
	for b := range samples {
		d.Counts(counts)
		for k, c := range counts {
			p[k] = float64(c) / float64(m)
		}
		f := comparePair(s, it, p, q)
		out[PerfectW1][b], out[PerfectAlignment][b], out[PerfectTVD][b] = f.w1, f.alignment, f.tvd
		out[PerfectSimBench][b], out[PerfectJSD][b] = f.simbench, f.jsd
	}
	return &out
}

// floorOf is the Floor of one figure's values on the draws.
func floorOf(v []float64) Floor {
	var sum float64
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return Floor{}
	}
	lo, hi := bootstrap.Interval(v)
	return Floor{Mean: finite(sum / float64(n)), Lo: lo, Hi: hi}
}

// fill sets row's Perfect from its draws (none: left empty).
func (d *perfectDraws) fill(row *ReferenceRow) {
	if d == nil {
		return
	}
	for f := range d {
		row.Perfect[f] = floorOf(d[f])
	}
}

// scaleFloors sets rs.Perfect from the draws of a scale's items (nil entries: items without a floor): Mean is
// the mean over the items of their floors' means (over the items that have one), as Means averages the
// items' figures; the interval's values are, per draw b, the mean over the items of their figure on draw b (over
// the items where it is defined). The items' draws are independent, so pairing them by b draws the mean's
// sampling distribution.
func scaleFloors(rs *ReferenceScale, items []*perfectDraws, rows []*ReferenceRow) {
	for f := range rs.Perfect {
		var sum float64
		n := 0
		for _, r := range rows {
			if r != nil && r.Perfect[f].Mean != nil {
				sum += *r.Perfect[f].Mean
				n++
			}
		}
		if n == 0 {
			continue
		}
		rs.Perfect[f].Mean = finite(sum / float64(n))
		var samples int
		for _, d := range items {
			if d != nil {
				samples = len(d[f])
				break
			}
		}
		v := make([]float64, samples)
		for b := range v {
			var s float64
			k := 0
			for _, d := range items {
				if d != nil && !math.IsNaN(d[f][b]) {
					s += d[f][b]
					k++
				}
			}
			v[b] = nan
			if k > 0 {
				v[b] = s / float64(k)
			}
		}
		rs.Perfect[f].Lo, rs.Perfect[f].Hi = bootstrap.Interval(v)
	}
}
