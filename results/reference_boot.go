package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/silicolab/silico/bootstrap"
	"github.com/silicolab/silico/psychometrics"
)

var nan = math.NaN()

// The keys of the reference's resamples and splits (bootstrap.Key with the group label): the personas of a
// group, the respondents of a group, and for a file of counts the people of one item and group.
const (
	keyPersona    = "persona"
	keyRespondent = "respondent"
	keyCounts     = "counts"
)

// unitsOf maps positions in a group's list of units to the units themselves.
func unitsOf(members, idx []int) []int {
	out := make([]int, len(idx))
	for i, j := range idx {
		out[i] = members[j]
	}
	return out
}

// splitHalves returns, per group and item, the mean over splits 0 … samples−1 of the W1 between the humans'
// distributions of the two halves of a random split (bootstrap.Splitter), nil where no split defines it. A file
// of answers splits the group's respondents (key respondent/group: every item of a group sees the same
// splits); a file of counts has no respondents linking its items, so it splits the people who gave each item's
// counts (key counts/group/item: a random half of the people who chose each option, a hypergeometric draw).
func (h *humanSide) splitHalves(groups []string, samples int, seed int64) [][]*float64 {
	s := h.spec
	items := len(s.Questionnaire.Items)
	out := make([][]*float64, len(groups))
	eachParallel(len(groups), func(gi int) {
		g := groups[gi]
		out[gi] = make([]*float64, items)
		if samples == 0 {
			return
		}
		sum, n := make([]float64, items), make([]int, items)
		add := func(it int, p, q []float64) {
			if p == nil || q == nil {
				return
			}
			mp, hp := scoredPMF(s, it, p), scoredPMF(s, it, q)
			if mp == nil || hp == nil {
				return
			}
			if v, err := psychometrics.Wasserstein1(mp, hp); err == nil {
				sum[it] += v
				n[it]++
			}
		}
		if h.rs != nil {
			members := h.members[g]
			sp := bootstrap.NewSplitter(seed, bootstrap.Key(keyRespondent, g), len(members))
			first := make([]bool, len(members))
			for range samples {
				a, b := halves(sp, first, members)
				for it := range items {
					pa, _ := h.dist(it, a)
					pb, _ := h.dist(it, b)
					add(it, pa, pb)
				}
			}
		} else {
			for it := range items {
				people := h.countPeople(it, g)
				if len(people) < 2 {
					continue
				}
				sp := bootstrap.NewSplitter(seed, bootstrap.Key(keyCounts, g, s.Questionnaire.Items[it].ID), len(people))
				first := make([]bool, len(people))
				k := len(h.score[it])
				for range samples {
					sp.Next(first)
					pa, pb := make([]float64, k), make([]float64, k)
					for u, o := range people {
						if first[u] {
							pa[o]++
						} else {
							pb[o]++
						}
					}
					add(it, normalised(pa), normalised(pb))
				}
			}
		}
		for it := range items {
			if n[it] > 0 {
				out[gi][it] = finite(sum[it] / float64(n[it]))
			}
		}
	})
	return out
}

// halves draws the next split of members and returns its two halves as units.
func halves(sp *bootstrap.Splitter, first []bool, members []int) (a, b []int) {
	sp.Next(first)
	for i, f := range first {
		if f {
			a = append(a, members[i])
		} else {
			b = append(b, members[i])
		}
	}
	return a, b
}

// normalised scales p in place to sum to 1; nil when it sums to 0.
func normalised(p []float64) []float64 {
	var t float64
	for _, v := range p {
		t += v
	}
	if t <= 0 {
		return nil
	}
	for k := range p {
		p[k] /= t
	}
	return p
}

// countPeople lists the people of a file of counts' item it and group g, one entry (their option) per person,
// options in order.
func (h *humanSide) countPeople(it int, g string) []int {
	var out []int
	for k, c := range h.counts[[2]string{h.spec.Questionnaire.Items[it].ID, g}] {
		for range c {
			out = append(out, k)
		}
	}
	return out
}

// referenceBoot holds the resampled human figures of every group and draws the model's resamples, so that
// resample b of a group is the same for every item, scale and model: personas under key persona/group,
// respondents under key respondent/group (bootstrap.New), a pure function of (seed, key, b).
type referenceBoot struct {
	a       *Analysis
	h       *humanSide
	samples int
	seed    int64
	groups  []string
	// personas[g] are the personas of group g, in spec order; personaRes[g][b] resample b of them (persona
	// indices).
	personas   [][]int
	personaRes [][][]int
	// human[g][it][b] is the humans' distribution on item it in resample b (nil where none answered).
	human [][][][]float64
	// humanRel[g][k][b] are the humans' α and ω of scale k in resample b (NaN where undefined).
	humanRel [][][][2]float64
	// means[m][g][k] are the sums of model m's item figures of group g over scale k's items (k = the number of
	// scales: over every item) in each resample, for the intervals of reference_scales.csv's means; rowIntervals
	// adds each row's as it is made.
	means [][][]meanSums
}

// meanFigures are the figures of ReferenceScale.Means that have intervals: the model's against the humans' (the
// baselines have none).
var meanFigures = [...]meanFigure{
	{MeanW1, IntervalW1}, {MeanAlignment, IntervalAlignment}, {MeanSimBench, IntervalSimBench},
}

// hasMeanInterval says whether ReferenceScale.Means[i] has an interval (is one of meanFigures).
func hasMeanInterval(i int) bool {
	return slices.ContainsFunc(meanFigures[:], func(f meanFigure) bool { return f.mean == i })
}

// meanFigure is a position in ReferenceScale.Means and the position in ReferenceRow.Intervals of the item figure
// it averages.
type meanFigure struct{ mean, item int }

// meanSums are, per resample, the sums of the item figures meanFigures over a scale's items and the number of
// items each is defined on.
type meanSums struct {
	sum [len(meanFigures)][]float64
	n   [len(meanFigures)][]int32
}

// newMeanSums allocates the sums of every model, group and scale (and the line over every item).
func (rb *referenceBoot) newMeanSums() {
	a := rb.a
	rb.means = make([][][]meanSums, len(a.Spec.Models))
	for m := range rb.means {
		rb.means[m] = make([][]meanSums, len(rb.groups))
		for gi := range rb.means[m] {
			rb.means[m][gi] = make([]meanSums, len(a.ScaleIDs)+1)
			for k := range rb.means[m][gi] {
				ms := &rb.means[m][gi][k]
				for j := range meanFigures {
					ms.sum[j], ms.n[j] = make([]float64, rb.samples), make([]int32, rb.samples)
				}
			}
		}
	}
}

// addMeans adds item it's resampled figures vals (rowIntervals') to model m's sums of group gi: its scale's and
// the sums over every item.
func (rb *referenceBoot) addMeans(m, it, gi int, vals *[rowIntervals][]float64) {
	ks := []int{len(rb.a.ScaleIDs)}
	if k := rb.a.ItemScale[it]; k >= 0 {
		ks = append(ks, k)
	}
	for _, k := range ks {
		ms := &rb.means[m][gi][k]
		for j, f := range meanFigures {
			for b, v := range vals[f.item] {
				if !math.IsNaN(v) {
					ms.sum[j][b] += v
					ms.n[j][b]++
				}
			}
		}
	}
}

// meanIntervals fills rs.MeanIntervals for model m, scale k (the number of scales: every item) and group gi:
// the quantiles of the means over the scale's items in each resample, each over the items where it is defined.
func (rb *referenceBoot) meanIntervals(rs *ReferenceScale, m, k, gi int) {
	if rb.samples == 0 {
		return
	}
	ms := &rb.means[m][gi][k]
	v := make([]float64, rb.samples)
	for j, f := range meanFigures {
		for b := range v {
			v[b] = nan
			if n := ms.n[j][b]; n > 0 {
				v[b] = ms.sum[j][b] / float64(n)
			}
		}
		rs.MeanIntervals[f.mean].Lo, rs.MeanIntervals[f.mean].Hi = bootstrap.Interval(v)
	}
}

func (a *Analysis) newReferenceBoot(h *humanSide, groups []string, samples int, seed int64) *referenceBoot {
	rb := a.newReferenceBootPersonas(groups, samples, seed)
	rb.h = h
	if samples == 0 {
		return rb
	}
	rb.personaRes = make([][][]int, len(groups))
	for gi := range groups {
		rb.personaRes[gi] = rb.personaResamples(gi)
	}
	rb.newMeanSums()
	rb.human = make([][][][]float64, len(groups))
	rb.humanRel = make([][][][2]float64, len(groups))
	// The groups are resampled in parallel: each fills only its own slots from its own streams, so the result
	// does not depend on the order they finish in.
	eachParallel(len(groups), func(gi int) { rb.resampleHumans(gi) })
	return rb
}

// newReferenceBootPersonas is a referenceBoot with each group's personas listed and nothing resampled yet.
func (a *Analysis) newReferenceBootPersonas(groups []string, samples int, seed int64) *referenceBoot {
	s := a.Spec
	rb := &referenceBoot{a: a, samples: samples, seed: seed, groups: groups}
	rb.personas = make([][]int, len(groups))
	for gi, g := range groups {
		for p := range s.Personas {
			if s.InGroup(p, g) {
				rb.personas[gi] = append(rb.personas[gi], p)
			}
		}
	}
	return rb
}

// eachParallel calls f(0) … f(n−1) on up to GOMAXPROCS goroutines and returns when all have returned.
func eachParallel(n int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// resampleHumans fills human[gi] and humanRel[gi]: the humans' distributions and α/ω in every resample of
// group gi.
func (rb *referenceBoot) resampleHumans(gi int) {
	a, h, s, samples, seed, g := rb.a, rb.h, rb.a.Spec, rb.samples, rb.seed, rb.groups[gi]
	items := len(s.Questionnaire.Items)
	rb.human[gi] = make([][][]float64, items)
	for it := range items {
		rb.human[gi][it] = make([][]float64, samples)
	}
	rb.humanRel[gi] = make([][][2]float64, len(a.ScaleIDs))
	for k := range a.ScaleIDs {
		rb.humanRel[gi][k] = make([][2]float64, samples)
		for b := range samples {
			rb.humanRel[gi][k][b] = [2]float64{nan, nan}
		}
	}
	if h.rs == nil {
		for it := range items {
			people := h.countPeople(it, g)
			if len(people) == 0 {
				continue
			}
			rs := bootstrap.New(seed, bootstrap.Key(keyCounts, g, s.Questionnaire.Items[it].ID), len(people))
			idx := make([]int, len(people))
			for b := range samples {
				rs.Fill(idx)
				p := make([]float64, len(h.score[it]))
				for _, u := range idx {
					p[people[u]]++
				}
				rb.human[gi][it][b] = normalised(p)
			}
		}
		return
	}
	members := h.members[g]
	if len(members) == 0 {
		return
	}
	rs := bootstrap.New(seed, bootstrap.Key(keyRespondent, g), len(members))
	idx := make([]int, len(members))
	for b := range samples {
		rs.Fill(idx)
		units := unitsOf(members, idx)
		for it := range items {
			rb.human[gi][it][b], _ = h.dist(it, units)
		}
		for k := range a.ScaleIDs {
			if rel, ok := h.reliability(a.ScaleItems(k), units); ok {
				rb.humanRel[gi][k][b] = relPair(rel)
			}
		}
	}
}

// relPair is α and ω of a reliability, NaN where undefined.
func relPair(r psychometrics.Reliability) [2]float64 {
	if r.Err != nil {
		return [2]float64{nan, nan}
	}
	return [2]float64{r.Raw, r.Omega}
}

// personaResamples returns the resamples of group gi's personas as persona indices.
func (rb *referenceBoot) personaResamples(gi int) [][]int {
	ps := rb.personas[gi]
	if len(ps) == 0 {
		return nil
	}
	out := bootstrap.Indices(rb.seed, bootstrap.Key(keyPersona, rb.groups[gi]), len(ps), rb.samples)
	for b := range out {
		out[b] = unitsOf(ps, out[b])
	}
	return out
}

// modelPMF is model m's distribution on item it over the cells of the personas units (repeats counting again),
// as GroupPMF pools them: nil without cells.
func (rb *referenceBoot) modelPMF(m, it int, units []int) []float64 {
	d := rb.a.dists
	k := len(rb.h.score[it])
	sum := make([]float64, k)
	cells := 0
	for _, p := range units {
		c, off := d.at(m, it, p)
		if d.cells[c] == 0 {
			continue
		}
		cells += int(d.cells[c])
		for i := range sum {
			sum[i] += d.sums[off+i]
		}
	}
	if cells == 0 {
		return nil
	}
	for i := range sum {
		sum[i] /= float64(cells)
	}
	return sum
}

// rowIntervals fills row.Intervals for model m, item it and group gi.
func (rb *referenceBoot) rowIntervals(row *ReferenceRow, m, it, gi int) {
	if rb.samples == 0 {
		return
	}
	s := rb.a.Spec
	var vals [rowIntervals][]float64
	for i := range vals {
		vals[i] = make([]float64, rb.samples)
	}
	res := rb.personaRes[gi]
	for b := range rb.samples {
		var p []float64
		if res != nil {
			p = rb.modelPMF(m, it, res[b])
		}
		q := rb.human[gi][it][b]
		f := pairFigures{w1: nan, alignment: nan, tvd: nan, simbench: nan, jsd: nan}
		if p != nil && q != nil {
			f = comparePair(s, it, p, q)
		}
		vals[IntervalW1][b], vals[IntervalAlignment][b], vals[IntervalJSD][b], vals[IntervalSimBench][b] = f.w1, f.alignment, f.jsd, f.simbench
		vals[IntervalModelMean][b], vals[IntervalHumanMean][b] = orNaN(expectedScore(s, it, p)), orNaN(expectedScore(s, it, q))
	}
	for i := range vals {
		row.Intervals[i].Lo, row.Intervals[i].Hi = bootstrap.Interval(vals[i])
	}
	rb.addMeans(m, it, gi, &vals)
}

// scaleIntervals fills rs.AlphaOmega for model m and scale k (items) of group gi.
func (rb *referenceBoot) scaleIntervals(rs *ReferenceScale, m, k int, items []int, gi int) {
	if rb.samples == 0 {
		return
	}
	var alpha, omega []float64
	for _, units := range rb.personaRes[gi] {
		r := relPair(psychometrics.ScaleReliability(rb.a.personaScores(m, items, units)))
		alpha, omega = append(alpha, r[0]), append(omega, r[1])
	}
	ha, ho := make([]float64, rb.samples), make([]float64, rb.samples)
	for b, r := range rb.humanRel[gi][k] {
		ha[b], ho[b] = r[0], r[1]
	}
	for i, v := range [][]float64{alpha, omega, ha, ho} {
		rs.AlphaOmega[i].Lo, rs.AlphaOmega[i].Hi = bootstrap.Interval(v)
	}
}

func orNaN(v *float64) float64 {
	if v == nil {
		return nan
	}
	return *v
}

// WriteReferenceResamples writes the resamples, splits and draws behind the reference intervals, split-half
// baselines and perfect-model floors of analysis a as CSV (bootstrap.IndicesHeader: label, b from 1, indices
// joined with ";"), so that another implementation can recompute every one from exactly the draws Export took.
// Per group of Reference.GroupLabels, in that order: "persona:GROUP" lists resample b of the group's personas
// as their 0-based index in spec.Personas; for a file of answers "respondent:GROUP" lists resample b of its
// respondents as their 0-based row in the file (header not counted), and "split1:GROUP" and "split2:GROUP" the
// two halves of split b in the same numbering; then per item, for each number m of cells a model's row of the
// item and group pools, "perfect:GROUP:ITEM:m" lists the perfect model's draw b, its m answers as 0-based
// option indices in the order drawn (a file of counts resamples and splits per item and group, which are not
// written; its draws are). Nothing is written without resamples (analysis.bootstrap.samples 0).
func WriteReferenceResamples(w io.Writer, a *Analysis) error {
	spec := a.Spec
	if spec.Reference == nil {
		return nil
	}
	samples, seed := spec.Analysis.Bootstrap.Resolve()
	groups := spec.Reference.GroupLabels()
	h := newHumanSide(spec, groups)
	rb := (&Analysis{Spec: spec}).newReferenceBootPersonas(groups, samples, seed)
	join := func(idx []int) string {
		s := make([]string, len(idx))
		for i, v := range idx {
			s[i] = strconv.Itoa(v)
		}
		return strings.Join(s, ";")
	}
	fail := func(err error) error { return fmt.Errorf("results: write resamples: %w", err) }
	if _, err := io.WriteString(w, bootstrap.IndicesHeader+"\n"); err != nil {
		return fail(err)
	}
	// rows[g][item] are the reference rows of a group and item, one per model.
	rows := map[[2]string][]*ReferenceRow{}
	for i := range a.Reference {
		r := &a.Reference[i]
		rows[[2]string{r.Group, r.ItemID}] = append(rows[[2]string{r.Group, r.ItemID}], r)
	}
	for gi, g := range groups {
		cw := csv.NewWriter(w)
		write := func(label string, b int, idx []int) {
			_ = cw.Write([]string{label, strconv.Itoa(b + 1), join(idx)})
		}
		for b, units := range rb.personaResamples(gi) {
			write("persona:"+g, b, units)
		}
		if h.rs != nil && samples > 0 {
			members := h.members[g]
			rs := bootstrap.New(seed, bootstrap.Key(keyRespondent, g), len(members))
			for b := range samples {
				write("respondent:"+g, b, unitsOf(members, rs.Next()))
			}
			sp := bootstrap.NewSplitter(seed, bootstrap.Key(keyRespondent, g), len(members))
			first := make([]bool, len(members))
			for b := range samples {
				one, two := halves(sp, first, members)
				write("split1:"+g, b, one)
				write("split2:"+g, b, two)
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return fail(err)
		}
		if samples == 0 {
			continue
		}
		for it, item := range spec.Questionnaire.Items {
			written := map[int]bool{}
			for _, r := range rows[[2]string{g, item.ID}] {
				m := r.Answers.Cells
				if r.Human == nil || m == 0 || written[m] {
					continue
				}
				written[m] = true
				label := "perfect:" + g + ":" + item.ID + ":" + strconv.Itoa(m)
				if err := bootstrap.WriteDraws(w, label, seed, perfectKey(spec, g, it, m), r.Human, m, samples); err != nil {
					return fail(err)
				}
			}
		}
	}
	return nil
}
