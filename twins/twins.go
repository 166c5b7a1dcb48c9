// Package twins scores digital twins person by person: how well a persona made from one real respondent's
// attributes (and, optionally, their answers to other questions) answers as that respondent did.
//
// For one item, over the persons with both a human answer and a twin answer:
//
//   - Exact: the share of persons whose twin chose the person's own option.
//   - WithinOne: the share whose twin's option is at most one ordinal position from the person's.
//   - MAE: the mean absolute difference of the two options' scores.
//   - Corr: the Pearson correlation across persons of the twin's score and the person's.
//
// For a scale, Exact and WithinOne pool the person × item pairs of the scale's items (the pairs where both
// answered, over the persons with both scale scores), and MAE and Corr compare the persons' scale scores,
// which the caller computes (scoring is the questionnaire's business, not this package's).
//
// Two baselines are scored on the same persons, so that "the twin knows this person" is told apart from "the
// twin knows people like this" and from "the twin knows people":
//
//   - Group: the person's demographic group — the persons who share all of the given attributes, an
//     unknown value ("") being a value of its own — predicts its modal option (for Exact and WithinOne) and
//     its mean score (for MAE and Corr).
//   - Population: every scored person together predicts its modal option and mean score. Its prediction
//     is the same for everyone, so its Corr is undefined (NaN).
//
// The baselines learn from every person given with a human answer (scale score), twin or not: pass the whole
// reference, and twins of a sample of it are scored against demographics learnt from all of it. The person's
// own answer is among what they learn from. That favours them, the more the smaller the groups (a group of one
// predicts its member exactly; among 60 persons in 24 groups the group's mode matched 71 % of answers in the
// tests' data, the population's 38 %): a twin that beats them beats a demographic predictor by at least that
// much, and groups of a few people make the group baseline an upper bound, not an estimate. Where several
// options tie as a group's most frequent, the baseline's Exact and WithinOne credit each tied option equally —
// the expected credit of breaking the tie at random, so no option order decides.
//
// Every figure has a 95 % bootstrap interval over persons: B resamples of the persons (package bootstrap's
// Resampler, under the caller's seed and key), the figure computed on each, and bootstrap.Interval's
// percentiles. The predictions are held fixed in the resamples — the twins' answers and the baselines'
// modes and means as computed on all persons — so each interval is the sampling interval of that predictor's
// accuracy over the people it is scored on.
//
// Retest. Where the same people answered the questionnaire a second time (a retest), their own consistency
// bounds what any twin can reach, and Park et al. (2024, "Generative agent simulations of 1,000 people")
// report a twin's accuracy as a share of it: "normalised accuracy", the twin's accuracy in predicting the
// person's first answers divided by the person's retest's accuracy in predicting them, computed for each person
// over the questions and averaged over persons (85 % on the General Social Survey in that paper); for
// continuous scores (the Big Five), the correlation across persons of the twin's scores with the first
// answers' divided by the retest's correlation with them. Here, over the persons with all three answers:
//
//   - For a scale: NormExact (NormWithinOne) is the mean over persons of a_i/r_i, a_i the share of the
//     scale's items on which the twin's option equals (is within one of) the person's first answer and r_i
//     the retest's share, both over the items with all three answers; persons with r_i = 0 have no ratio and
//     are left out (Normalizable counts the rest). NormCorr is Corr(twin, first)/Corr(retest, first) of the
//     scale scores.
//   - For an item there is one answer per person, so a per-person ratio is 0/1 over 0/1: NormExact is the
//     ratio of the shares over persons, Exact(twin)/Exact(retest), likewise NormWithinOne and NormCorr.
//
// The retest's own accuracy and the twin's on the same persons are reported beside the ratios.
package twins

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/silicolab/silico/bootstrap"
)

// Missing marks a person without an answer (in Item.Human, Twin, Retest).
const Missing = -1

// Item is one item's answers, person by person (index i is the same person everywhere).
type Item struct {
	// Scores[k] is the score of the option at ordinal position k, reverse keying applied.
	Scores []float64
	// Human[i], Twin[i] and Retest[i] are the ordinal positions (0 … len(Scores)−1) of person i's answer, of
	// their twin's and of their retest's; Missing where there is none. Retest is nil without a retest.
	Human, Twin, Retest []int
}

// Scale is one scale's items and scale scores over the same persons.
type Scale struct {
	Items []Item
	// Human[i], Twin[i] and Retest[i] are person i's scale scores; NaN where there is none. Retest is nil
	// without a retest.
	Human, Twin, Retest []float64
}

// Bootstrap says how the intervals are drawn: Samples resamples of the scored persons by bootstrap.New(Seed,
// Key, n); the retest's persons under bootstrap.Key(Key, "retest"). Samples 0: no intervals.
type Bootstrap struct {
	Seed    int64
	Key     string
	Samples int
}

// Figure is a figure with its 95 % bootstrap interval; Lo and Hi are NaN without one (no resamples, or none
// on which the figure is defined). Value is NaN where the figure is undefined.
type Figure struct {
	Value, Lo, Hi float64
}

// Accuracy is one predictor's figures.
type Accuracy struct {
	Exact, WithinOne, MAE, Corr Figure
}

// Result is the person-by-person accuracy on one item or one scale.
type Result struct {
	// Persons is the number of persons scored: with a human and a twin answer (scale score, for a scale).
	Persons int
	// Twin is the twins' accuracy, Group and Population the baselines'.
	Twin, Group, Population Accuracy
	// Retest is nil without a retest.
	Retest *Retest
}

// Retest is the accuracy normalised by the persons' own retest consistency.
type Retest struct {
	// Persons is the number of persons with a human, a twin and a retest answer (scale score).
	Persons int
	// Twin and Retest are the twins' accuracy and the retest's own, on those persons.
	Twin, Retest Accuracy
	// NormExact, NormWithinOne and NormCorr are the normalised figures (see the package doc).
	NormExact, NormWithinOne, NormCorr Figure
	// Normalizable is the number of persons a per-person ratio is averaged over: for a scale those with a
	// retest agreement above 0 (for NormExact; NormWithinOne's may be more), for an item Persons.
	Normalizable int
}

// terms are one predictor's per-person parts of its figures, over a set of persons: agreements out of pairs
// (1 and 0/1 for an item), the predicted and the actual score.
type terms struct {
	exact, within, pairs []float64
	pred, actual         []float64
}

// accuracy returns Exact, WithinOne, MAE and Corr with person i counted w[i] times (w nil: once).
func (t terms) accuracy(w []float64) [4]float64 {
	weight := func(i int) float64 {
		if w == nil {
			return 1
		}
		return w[i]
	}
	var ex, wi, pairs, abs, total float64
	for i := range t.pred {
		wt := weight(i)
		ex += wt * t.exact[i]
		wi += wt * t.within[i]
		pairs += wt * t.pairs[i]
		abs += wt * math.Abs(t.pred[i]-t.actual[i])
		total += wt
	}
	out := [4]float64{math.NaN(), math.NaN(), abs / total, correlation(t.pred, t.actual, w)}
	if pairs > 0 {
		out[0], out[1] = ex/pairs, wi/pairs
	}
	return out
}

// correlation is Pearson's r of x and y with weights w (nil: 1; a person drawn twice counts twice); NaN
// where x or y is constant over the persons of positive weight.
func correlation(x, y, w []float64) float64 {
	weight := func(i int) float64 {
		if w == nil {
			return 1
		}
		return w[i]
	}
	var sw, mx, my float64
	x0, y0 := math.NaN(), math.NaN()
	constX, constY := true, true
	for i := range x {
		if weight(i) == 0 {
			continue
		}
		if math.IsNaN(x0) {
			x0, y0 = x[i], y[i]
		}
		constX = constX && x[i] == x0
		constY = constY && y[i] == y0
		sw += weight(i)
		mx += weight(i) * x[i]
		my += weight(i) * y[i]
	}
	if constX || constY {
		return math.NaN()
	}
	mx, my = mx/sw, my/sw
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += weight(i) * dx * dy
		sxx += weight(i) * dx * dx
		syy += weight(i) * dy * dy
	}
	return sxy / math.Sqrt(sxx*syy)
}

// groups returns each person's group key: their attributes joined (bootstrap.Key), "" for everyone when attrs
// is nil. An error when attrs does not have one entry per person.
func groups(attrs [][]string, n int) ([]string, error) {
	out := make([]string, n)
	if attrs == nil {
		return out, nil
	}
	if len(attrs) != n {
		return nil, fmt.Errorf("twins: attributes of %d persons for %d persons", len(attrs), n)
	}
	for i, a := range attrs {
		out[i] = bootstrap.Key(a...)
	}
	return out, nil
}

// tally is a predictor that knows only a group: the counts of its members' options and the sum of their
// scores.
type tally struct {
	counts []float64
	sum, n float64
}

// modes are the options tied as most frequent.
func (t *tally) modes() []int {
	top := slices.Max(t.counts)
	var out []int
	for k, c := range t.counts {
		if c == top {
			out = append(out, k)
		}
	}
	return out
}

// credit is the expected exact and within-one agreement of the group's modal answer with option h, each tied
// mode credited equally.
func credit(modes []int, h int) (exact, within float64) {
	for _, k := range modes {
		if k == h {
			exact++
		}
		if k-h <= 1 && h-k <= 1 {
			within++
		}
	}
	return exact / float64(len(modes)), within / float64(len(modes))
}

// pairOf is one answer of a person to an item of a scale: the person, the item (its index) and the human's
// option.
type pairOf struct{ person, item, human int }

// basis is what the baselines learn from: every (person, item) answer of a human, and every person with a
// human score, twin or not.
type basis struct {
	answers []pairOf
	persons []int
}

// baselineTerms returns the group and the population baselines' terms over the scored persons: their modal
// options, tallied over the basis's answers (item j has options[j] options; an answer counts in its person's
// group) and credited against each scored pair, and their mean of the basis persons' actual scores. The person's
// own answers are in the basis.
func baselineTerms(b basis, scored []pairOf, options []int, persons []int, group []string, actual func(person int) float64) (grp, pop terms) {
	index := make(map[int]int, len(persons))
	for j, p := range persons {
		index[p] = j
	}
	// who is a group, or the population (everyone, whatever their group).
	type who struct {
		group      string
		population bool
	}
	type key struct {
		who
		item int
	}
	tallies := map[key]*tally{}
	count := func(k key, h int) {
		if tallies[k] == nil {
			tallies[k] = &tally{counts: make([]float64, options[k.item])}
		}
		tallies[k].counts[h]++
	}
	everyone := who{population: true}
	for _, pr := range b.answers {
		count(key{who{group: group[pr.person]}, pr.item}, pr.human)
		count(key{everyone, pr.item}, pr.human)
	}
	modes := make(map[key][]int, len(tallies))
	for k, t := range tallies {
		modes[k] = t.modes()
	}
	means := map[who]*tally{}
	for _, p := range b.persons {
		for _, g := range []who{{group: group[p]}, everyone} {
			if means[g] == nil {
				means[g] = &tally{}
			}
			means[g].sum += actual(p)
			means[g].n++
		}
	}
	newTerms := func() terms {
		n := len(persons)
		return terms{exact: make([]float64, n), within: make([]float64, n), pairs: make([]float64, n),
			pred: make([]float64, n), actual: make([]float64, n)}
	}
	grp, pop = newTerms(), newTerms()
	for _, pr := range scored {
		j := index[pr.person]
		for _, c := range []struct {
			t *terms
			g who
		}{{&grp, who{group: group[pr.person]}}, {&pop, everyone}} {
			e, w := credit(modes[key{c.g, pr.item}], pr.human)
			c.t.exact[j] += e
			c.t.within[j] += w
			c.t.pairs[j]++
		}
	}
	for j, p := range persons {
		g, all := means[who{group: group[p]}], means[everyone]
		grp.pred[j], grp.actual[j] = g.sum/g.n, actual(p)
		pop.pred[j], pop.actual[j] = all.sum/all.n, actual(p)
	}
	return grp, pop
}

// resampled returns, for each predictor, the figures (Accuracy) of the persons with their bootstrap
// intervals: samples resamples of len(persons) units by bootstrap.New(seed, key, n).
func resampled(b Bootstrap, key string, preds ...terms) []Accuracy {
	n := len(preds[0].pred)
	vals := make([][4][]float64, len(preds))
	eachResample(b, key, n, func(w []float64) {
		for p, t := range preds {
			for s, v := range t.accuracy(w) {
				vals[p][s] = append(vals[p][s], v)
			}
		}
	})
	out := make([]Accuracy, len(preds))
	for p, t := range preds {
		point := t.accuracy(nil)
		figs := [4]*Figure{&out[p].Exact, &out[p].WithinOne, &out[p].MAE, &out[p].Corr}
		for s := range figs {
			*figs[s] = figure(point[s], vals[p][s])
		}
	}
	return out
}

// eachResample calls f with the multiplicities of the n persons in each of b.Samples resamples drawn by
// bootstrap.New(b.Seed, key, n), in order (the slice is reused).
func eachResample(b Bootstrap, key string, n int, f func(w []float64)) {
	if b.Samples <= 0 {
		return
	}
	rs := bootstrap.New(b.Seed, key, n)
	counts := make([]int, n)
	w := make([]float64, n)
	for range b.Samples {
		rs.Counts(counts)
		for i, c := range counts {
			w[i] = float64(c)
		}
		f(w)
	}
}

// figure is a value with the percentile interval of its resampled values.
func figure(v float64, resampled []float64) Figure {
	f := Figure{Value: v, Lo: math.NaN(), Hi: math.NaN()}
	if lo, hi := bootstrap.Interval(resampled); lo != nil {
		f.Lo, f.Hi = *lo, *hi
	}
	return f
}

// checkItem checks an item's answers against n persons.
func checkItem(it Item, n int, name string) error {
	k := len(it.Scores)
	if k == 0 {
		return fmt.Errorf("twins: %s has no options", name)
	}
	for _, s := range []struct {
		what string
		x    []int
	}{{"human", it.Human}, {"twin", it.Twin}, {"retest", it.Retest}} {
		if s.x == nil && s.what == "retest" {
			continue
		}
		if len(s.x) != n {
			return fmt.Errorf("twins: %s has %d %s answers for %d persons", name, len(s.x), s.what, n)
		}
		for i, v := range s.x {
			if v != Missing && (v < 0 || v >= k) {
				return fmt.Errorf("twins: %s: person %d's %s answer is position %d of %d options", name, i, s.what, v, k)
			}
		}
	}
	return nil
}

// ItemAccuracy scores the twins of one item against their persons, beside the baselines of the persons'
// groups (attrs[i] are person i's grouping attributes; nil: one group of everyone) and of the population,
// with bootstrap intervals over persons drawn as b says.
func ItemAccuracy(it Item, attrs [][]string, b Bootstrap) (Result, error) {
	n := len(it.Human)
	if err := checkItem(it, n, "the item"); err != nil {
		return Result{}, err
	}
	group, err := groups(attrs, n)
	if err != nil {
		return Result{}, err
	}
	var persons []int
	for i := range n {
		if it.Human[i] != Missing && it.Twin[i] != Missing {
			persons = append(persons, i)
		}
	}
	res := Result{Persons: len(persons)}
	if len(persons) == 0 {
		return res, fmt.Errorf("twins: no person has both a human and a twin answer")
	}
	score := func(pos int) float64 { return it.Scores[pos] }
	twin := predictorTerms(persons, func(p int) (int, int) { return it.Twin[p], it.Human[p] }, score)
	pairs := make([]pairOf, len(persons))
	for j, p := range persons {
		pairs[j] = pairOf{person: p, human: it.Human[p]}
	}
	var base basis
	for p, h := range it.Human {
		if h != Missing {
			base.answers = append(base.answers, pairOf{person: p, human: h})
			base.persons = append(base.persons, p)
		}
	}
	grp, pop := baselineTerms(base, pairs, []int{len(it.Scores)}, persons, group,
		func(p int) float64 { return score(it.Human[p]) })
	acc := resampled(b, b.Key, twin, grp, pop)
	res.Twin, res.Group, res.Population = acc[0], acc[1], acc[2]

	if it.Retest != nil {
		var rp []int
		for _, p := range persons {
			if it.Retest[p] != Missing {
				rp = append(rp, p)
			}
		}
		if len(rp) > 0 {
			tw := predictorTerms(rp, func(p int) (int, int) { return it.Twin[p], it.Human[p] }, score)
			re := predictorTerms(rp, func(p int) (int, int) { return it.Retest[p], it.Human[p] }, score)
			res.Retest = itemRetest(b, tw, re)
		} else {
			res.Retest = &Retest{}
		}
	}
	return res, nil
}

// predictorTerms are the terms of a predictor of one item that answers pred(p) where the person answered
// actual(p) (ordinal positions), over persons.
func predictorTerms(persons []int, answers func(p int) (pred, actual int), score func(int) float64) terms {
	n := len(persons)
	t := terms{exact: make([]float64, n), within: make([]float64, n), pairs: make([]float64, n),
		pred: make([]float64, n), actual: make([]float64, n)}
	for j, p := range persons {
		f, h := answers(p)
		t.pairs[j] = 1
		if f == h {
			t.exact[j] = 1
		}
		if f-h <= 1 && h-f <= 1 {
			t.within[j] = 1
		}
		t.pred[j], t.actual[j] = score(f), score(h)
	}
	return t
}

// itemRetest normalises an item's twin figures by the retest's on the same persons: ratios of the shares and
// of the correlations, on the point estimates and on every resample.
func itemRetest(b Bootstrap, tw, re terms) *Retest {
	r := &Retest{Persons: len(tw.pred), Normalizable: len(tw.pred)}
	ratios := func(w []float64) [3]float64 {
		a, c := tw.accuracy(w), re.accuracy(w)
		return [3]float64{a[0] / c[0], a[1] / c[1], a[3] / c[3]}
	}
	acc := resampled(b, bootstrap.Key(b.Key, "retest"), tw, re)
	r.Twin, r.Retest = acc[0], acc[1]
	r.NormExact, r.NormWithinOne, r.NormCorr = normalised(b, len(tw.pred), ratios)
	return r
}

// normalised returns three ratio figures with their intervals, the ratios computed by f on the point
// estimates (w nil) and on the retest resamples (the stream resampled draws for the retest key), a ratio with
// a zero or undefined denominator being NaN.
func normalised(b Bootstrap, n int, f func(w []float64) [3]float64) (x, y, z Figure) {
	point := clean(f(nil))
	var vals [3][]float64
	eachResample(b, bootstrap.Key(b.Key, "retest"), n, func(w []float64) {
		for s, v := range clean(f(w)) {
			vals[s] = append(vals[s], v)
		}
	})
	return figure(point[0], vals[0]), figure(point[1], vals[1]), figure(point[2], vals[2])
}

// clean turns the infinities of a division by zero into NaN: a ratio to no agreement is undefined.
func clean(v [3]float64) [3]float64 {
	for i := range v {
		if math.IsInf(v[i], 0) {
			v[i] = math.NaN()
		}
	}
	return v
}

// ScaleAccuracy scores the twins of one scale against their persons, as ItemAccuracy does an item: Exact and
// WithinOne pooled over the scale's item pairs, MAE and Corr of the scale scores.
func ScaleAccuracy(sc Scale, attrs [][]string, b Bootstrap) (Result, error) {
	n := len(sc.Human)
	if len(sc.Twin) != n || (sc.Retest != nil && len(sc.Retest) != n) {
		return Result{}, fmt.Errorf("twins: scale scores of %d human, %d twin and %d retest answers", n, len(sc.Twin), len(sc.Retest))
	}
	if len(sc.Items) == 0 {
		return Result{}, fmt.Errorf("twins: a scale without items")
	}
	options := make([]int, len(sc.Items))
	for j, it := range sc.Items {
		if err := checkItem(it, n, fmt.Sprintf("item %d of the scale", j)); err != nil {
			return Result{}, err
		}
		if (it.Retest == nil) != (sc.Retest == nil) {
			return Result{}, fmt.Errorf("twins: item %d of the scale has a retest where the scale has %s", j,
				map[bool]string{true: "none", false: "one"}[sc.Retest == nil])
		}
		options[j] = len(it.Scores)
	}
	group, err := groups(attrs, n)
	if err != nil {
		return Result{}, err
	}
	var persons []int
	for i := range n {
		if !math.IsNaN(sc.Human[i]) && !math.IsNaN(sc.Twin[i]) {
			persons = append(persons, i)
		}
	}
	res := Result{Persons: len(persons)}
	if len(persons) == 0 {
		return res, fmt.Errorf("twins: no person has both a human and a twin scale score")
	}
	twin := scaleTerms(sc, persons, func(it Item, p int) int { return it.Twin[p] }, sc.Twin)
	var pairs []pairOf
	for _, p := range persons {
		for j, it := range sc.Items {
			if it.Human[p] != Missing && it.Twin[p] != Missing {
				pairs = append(pairs, pairOf{person: p, item: j, human: it.Human[p]})
			}
		}
	}
	var base basis
	for p, h := range sc.Human {
		if !math.IsNaN(h) {
			base.persons = append(base.persons, p)
		}
		for j, it := range sc.Items {
			if it.Human[p] != Missing {
				base.answers = append(base.answers, pairOf{person: p, item: j, human: it.Human[p]})
			}
		}
	}
	grp, pop := baselineTerms(base, pairs, options, persons, group, func(p int) float64 { return sc.Human[p] })
	acc := resampled(b, b.Key, twin, grp, pop)
	res.Twin, res.Group, res.Population = acc[0], acc[1], acc[2]

	if sc.Retest != nil {
		res.Retest = scaleRetest(sc, persons, b)
	}
	return res, nil
}

// scaleTerms are the terms of a predictor of a scale (pred gives its option on an item, predScore its scale
// scores) over persons: agreements on the items where the person and the predictor both answered.
func scaleTerms(sc Scale, persons []int, pred func(it Item, p int) int, predScore []float64) terms {
	n := len(persons)
	t := terms{exact: make([]float64, n), within: make([]float64, n), pairs: make([]float64, n),
		pred: make([]float64, n), actual: make([]float64, n)}
	for j, p := range persons {
		for _, it := range sc.Items {
			f, h := pred(it, p), it.Human[p]
			if f == Missing || h == Missing {
				continue
			}
			t.pairs[j]++
			if f == h {
				t.exact[j]++
			}
			if f-h <= 1 && h-f <= 1 {
				t.within[j]++
			}
		}
		t.pred[j], t.actual[j] = predScore[p], sc.Human[p]
	}
	return t
}

// scaleRetest is the retest normalisation of a scale over the persons (of those scored) with a retest scale
// score: Park et al.'s per-person ratios, averaged.
func scaleRetest(sc Scale, scored []int, b Bootstrap) *Retest {
	var persons []int
	for _, p := range scored {
		if !math.IsNaN(sc.Retest[p]) {
			persons = append(persons, p)
		}
	}
	r := &Retest{Persons: len(persons)}
	if len(persons) == 0 {
		return r
	}
	// Both predictors on the items where the person, the twin and the retest all answered.
	three := Scale{Items: make([]Item, len(sc.Items)), Human: sc.Human}
	for j, it := range sc.Items {
		h := slices.Clone(it.Human)
		for p := range h {
			if it.Twin[p] == Missing || it.Retest[p] == Missing {
				h[p] = Missing
			}
		}
		three.Items[j] = Item{Scores: it.Scores, Human: h, Twin: it.Twin, Retest: it.Retest}
	}
	tw := scaleTerms(three, persons, func(it Item, p int) int { return it.Twin[p] }, sc.Twin)
	re := scaleTerms(three, persons, func(it Item, p int) int { return it.Retest[p] }, sc.Retest)
	acc := resampled(b, bootstrap.Key(b.Key, "retest"), tw, re)
	r.Twin, r.Retest = acc[0], acc[1]
	for j := range persons {
		if re.exact[j] > 0 {
			r.Normalizable++
		}
	}
	// a_i/r_i per person (the shares' common denominator, the person's pairs, cancels), averaged over the
	// persons whose retest agrees at least once.
	perPerson := func(num, den []float64, w []float64) float64 {
		var sum, cnt float64
		for j := range num {
			wt := 1.0
			if w != nil {
				wt = w[j]
			}
			if den[j] > 0 && wt > 0 {
				sum += wt * num[j] / den[j]
				cnt += wt
			}
		}
		return sum / cnt
	}
	r.NormExact, r.NormWithinOne, r.NormCorr = normalised(b, len(persons), func(w []float64) [3]float64 {
		return [3]float64{perPerson(tw.exact, re.exact, w), perPerson(tw.within, re.within, w),
			tw.accuracy(w)[3] / re.accuracy(w)[3]}
	})
	return r
}

// String is the figure as "value [lo, hi]", for logs and test failures.
func (f Figure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.4g", f.Value)
	if !math.IsNaN(f.Lo) {
		fmt.Fprintf(&b, " [%.4g, %.4g]", f.Lo, f.Hi)
	}
	return b.String()
}
