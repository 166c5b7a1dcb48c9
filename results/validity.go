package results

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/silicolab/silico/bootstrap"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
)

// The statistics of validity.csv (Validity.Statistic). docs/architecture.md defines each and says what it
// guards against.
const (
	// ValidityR2 is the share of the scale-score variance an attribute explains, per side.
	ValidityR2 = "r2"
	// ValidityDifference is the difference of one level's mean scale score from the attribute's first level's.
	ValidityDifference = "difference"
	// ValiditySDRatio is the model's SD of a scale or item score over the humans'.
	ValiditySDRatio = "sd_ratio"
	// ValidityAcquiescence is the mean raw answer over a scale's two keyings minus the midpoint.
	ValidityAcquiescence = "acquiescence"
	// ValidityContradiction is the share of (positive, negative) item pairs answered on the agreeing side twice.
	ValidityContradiction = "contradiction"
	// ValidityCongruence is Tucker's congruence of the two sides' one-factor loadings on a scale.
	ValidityCongruence = "congruence"
)

// ValidityResampleKey is the bootstrap key (bootstrap.New) of validity.csv's resamples of side ("personas" or
// "respondents"): every model, scale and statistic of one export sees the same resample b of a side, so the
// figures of one resample are coherent, and WriteValidityResamples writes them for another implementation.
func ValidityResampleKey(side string) string { return bootstrap.Key("validity", side) }

// Validity is one line of validity.csv: one statistic of one model and scale, for the whole sample (Attribute
// GroupAll) or for an attribute the reference's groups and the personas share, on the model's personas beside
// the human respondents.
type Validity struct {
	Model string
	Scale string
	// Attribute is the attribute (a column of reference.groups) of r2 and difference; experiment.GroupAll for
	// the statistics of the whole sample.
	Attribute string
	// Level is the level a difference is of, Baseline the level it is taken from (the attribute's first).
	Level, Baseline string
	// ItemID is the item of an item's sd_ratio; empty for a scale's figures.
	ItemID    string
	Statistic string
	// NModel and NHuman are the personas and respondents the point values are computed over (head counts: a
	// weight does not change them).
	NModel, NHuman int
	// ModelValue and HumanValue are the statistic on each side (for sd_ratio and congruence: the SD and loadings' sides,
	// see docs; congruence has none); Value the figure that compares them (sd_ratio, congruence), nil for the
	// statistics reported per side. _Lo and _Hi are their 95 % bootstrap intervals, nil without resamples.
	ModelValue, ModelLo, ModelHi *float64
	HumanValue, HumanLo, HumanHi *float64
	Value, ValueLo, ValueHi      *float64
	// Agree says, for a difference, whether the model's and the humans' have the same sign (math sign, 0 its
	// own); nil elsewhere and where either is empty.
	Agree *bool
	// Note says why a number is empty, which levels only one side has, and over how many resamples an
	// interval is when some left the statistic undefined.
	Note string
}

// validitySide is one side of validity.csv, its units (a model's personas or the human respondents) with
// what every statistic reads of them. A statistic of the side is a function of a list of unit indices with
// repetition: the identity for the point value, a bootstrap resample for an interval.
type validitySide struct {
	name string // "model" or "humans": the notes' word for the side
	unit string // "personas" or "respondents"
	n    int
	// score and raw are each unit's keyed (reverse-keyed items reversed) and raw score per questionnaire item,
	// NaN where it has none: for a persona its expected score over its mean distribution, for a respondent its
	// answer's.
	score, raw [][]float64
	// item[it] is the column of score of item it, [unit]: what the per-item statistics read in every resample.
	item [][]float64
	// level[a][u] is unit u's level of attribute a as an index into the attribute's levels, -1 for none.
	level [][]int
	// weight is each unit's weight; nil: every unit weighs 1.
	weight []float64
	// scale[k][u] is unit u's score on scale k (the mean of its item scores), acq[k][u] its acquiescence, NaN
	// where undefined; agree[k][u] and pairs[k][u] its (positive, negative) pairs of scale k answered on the
	// agreeing side twice and answered at all.
	scale, acq, agree, pairs [][]float64
	// ys, ws, gs and rows are scratch buffers: a resample's values, weights, levels and score rows as the
	// psychometrics functions take them (a side is used by one goroutine). seen and stamp count a resample's
	// distinct units: unit u was met in the current count when seen[u] == stamp.
	ys, ws []float64
	gs     []int
	rows   [][]float64
	seen   []uint32
	stamp  uint32
	// byItems holds scaleRows' matrices by their list of items.
	byItems map[string][][]float64
}

// gather fills ys (and ws with weights, gs with attribute g's levels when g ≥ 0) with the units of idx whose
// value y is present and, with g ≥ 0, who have a level; it returns them and the weights, nil without weights.
func (v *validitySide) gather(y []float64, g int, idx []int) (ys, ws []float64, gs []int) {
	v.ys, v.ws, v.gs = v.ys[:0], v.ws[:0], v.gs[:0]
	for _, u := range idx {
		if math.IsNaN(y[u]) || g >= 0 && v.level[g][u] < 0 {
			continue
		}
		v.ys = append(v.ys, y[u])
		v.ws = append(v.ws, v.w(u))
		if g >= 0 {
			v.gs = append(v.gs, v.level[g][u])
		}
	}
	if v.weight == nil {
		return v.ys, nil, v.gs
	}
	return v.ys, v.ws, v.gs
}

// distinct returns, per level of attribute g (levels of them), the number of distinct units of idx with a
// value y and a level; with g < 0 one count over every unit of idx with a value. A resample draws units with
// replacement, and a rule that needs two units means two people (or personas): one unit drawn twice is
// still one.
func (v *validitySide) distinct(y []float64, g, levels int, idx []int) []int {
	if len(v.seen) != v.n {
		v.seen, v.stamp = make([]uint32, v.n), 0
	}
	v.stamp++
	if v.stamp == 0 { // wrapped: start the marks afresh
		clear(v.seen)
		v.stamp = 1
	}
	n := make([]int, max(levels, 1))
	for _, u := range idx {
		if math.IsNaN(y[u]) || v.seen[u] == v.stamp {
			continue
		}
		l := 0
		if g >= 0 {
			if l = v.level[g][u]; l < 0 {
				continue
			}
		}
		v.seen[u] = v.stamp
		n[l]++
	}
	return n
}

// keying is the items of one scale by key, and each item's midpoint: (lowest + highest weight)/2 of its
// scored options.
type keying struct {
	items, pos, neg []int
	mid             map[int]float64
}

func (a *Analysis) keyings() []keying {
	s := a.Spec
	out := make([]keying, len(a.ScaleIDs))
	for k := range a.ScaleIDs {
		kk := keying{items: a.ScaleItems(k), mid: map[int]float64{}}
		for _, it := range kk.items {
			lo, hi := weightRange(s, it)
			kk.mid[it] = (lo + hi) / 2
			if s.Questionnaire.Items[it].Reversed {
				kk.neg = append(kk.neg, it)
			} else {
				kk.pos = append(kk.pos, it)
			}
		}
		out[k] = kk
	}
	return out
}

// weightRange is the lowest and highest weight of item it's scored options.
func weightRange(s *experiment.Spec, it int) (lo, hi float64) {
	seen := false
	for _, o := range s.OptionsFor(it).Options {
		if o.IgnoredForScale {
			continue
		}
		w := float64(o.Weight)
		if !seen || w < lo {
			lo = w
		}
		if !seen || w > hi {
			hi = w
		}
		seen = true
	}
	return lo, hi
}

// rawOf is the raw (unreversed) value of a keyed score of item it: a reverse-keyed item's score is
// lowest + highest − weight, so its weight is lowest + highest − score.
func rawOf(s *experiment.Spec, it int, score float64) float64 {
	if !s.Questionnaire.Items[it].Reversed {
		return score
	}
	lo, hi := weightRange(s, it)
	return lo + hi - score
}

// contradictionCounts adds to pairs and agree one respondent's (positive, negative) pairs of a scale: with P
// positive items answered, A of them on the agreeing side (raw above the midpoint), and N, B the same of the
// negative items, P·N pairs of which A·B have both answers agreeing.
func contradictionCounts(kk keying, raw func(it int) float64) (agree, pairs float64) {
	var p, a, n, b float64
	for _, it := range kk.pos {
		if v := raw(it); !math.IsNaN(v) {
			p++
			if v > kk.mid[it] {
				a++
			}
		}
	}
	for _, it := range kk.neg {
		if v := raw(it); !math.IsNaN(v) {
			n++
			if v > kk.mid[it] {
				b++
			}
		}
	}
	return a * b, p * n
}

// countContradictions adds the written answers of one (model, seed) block (scores in item × persona order,
// the cells shown as written in the items' own wording, as reliability.csv reads them) to the model's
// contradiction counts per persona and scale. Only a spec with a reference keeps them.
func (a *Analysis) countContradictions(m int, score []int32, has []bool) {
	s := a.Spec
	if s.Reference == nil {
		return
	}
	np, ns := len(s.Personas), len(a.ScaleIDs)
	if a.contra == nil {
		a.contra = make([][2]float64, len(s.Models)*np*ns)
		a.keys = a.keyings()
	}
	for k, kk := range a.keys {
		for p := range np {
			ag, pr := contradictionCounts(kk, func(it int) float64 {
				if !has[it*np+p] {
					return math.NaN()
				}
				return rawOf(s, it, float64(score[it*np+p]))
			})
			c := &a.contra[(m*np+p)*ns+k]
			c[0] += ag
			c[1] += pr
		}
	}
}

// modelSide is the model m's personas as a validitySide.
func (a *Analysis) modelSide(m int, attrs []string, levels [][]string) *validitySide {
	s := a.Spec
	np, ni := len(s.Personas), len(s.Questionnaire.Items)
	v := &validitySide{name: "model", unit: "personas", n: np, score: make([][]float64, np), raw: make([][]float64, np)}
	for p := range np {
		v.score[p], v.raw[p] = make([]float64, ni), make([]float64, ni)
		for it := range ni {
			v.score[p][it], v.raw[p][it] = math.NaN(), math.NaN()
			if e := expectedScore(s, it, a.PersonaPMF(m, it, p).P); e != nil {
				v.score[p][it], v.raw[p][it] = *e, rawOf(s, it, *e)
			}
		}
	}
	v.level = make([][]int, len(attrs))
	for g, col := range attrs {
		v.level[g] = make([]int, np)
		for p := range np {
			val, ok := s.Personas[p].Attributes[col]
			v.level[g][p] = -1
			if ok {
				v.level[g][p] = slices.Index(levels[g], strings.TrimSpace(val))
			}
		}
	}
	v.fillScales(a.keys)
	ns := len(a.ScaleIDs)
	for k := range a.ScaleIDs {
		for p := range np {
			v.agree[k][p], v.pairs[k][p] = 0, 0
			if a.contra != nil {
				c := a.contra[(m*np+p)*ns+k]
				v.agree[k][p], v.pairs[k][p] = c[0], c[1]
			}
		}
	}
	return v
}

// humanSide is the reference's respondents as a validitySide; nil without respondents.
func (a *Analysis) humanSide(attrs []string, levels [][]string) *validitySide {
	s := a.Spec
	rs := s.Reference.Respondents
	if rs == nil {
		return nil
	}
	ni := len(s.Questionnaire.Items)
	col := make([]int, len(rs.Items)) // respondents' item j → questionnaire item
	for j, id := range rs.Items {
		col[j] = slices.IndexFunc(s.Questionnaire.Items, func(it experiment.Item) bool { return it.ID == id })
	}
	v := &validitySide{name: "humans", unit: "respondents", n: rs.Len(), weight: rs.Weights,
		score: make([][]float64, rs.Len()), raw: make([][]float64, rs.Len())}
	for r, ans := range rs.Answers {
		v.score[r], v.raw[r] = make([]float64, ni), make([]float64, ni)
		for it := range ni {
			v.score[r][it], v.raw[r][it] = math.NaN(), math.NaN()
		}
		for j, k := range ans {
			it := col[j]
			if k < 0 || it < 0 {
				continue
			}
			o := s.OptionsFor(it).Options[k]
			if sc, ok := s.Score(it, o.ID); ok {
				v.score[r][it], v.raw[r][it] = float64(sc), float64(o.Weight)
			}
		}
	}
	v.level = make([][]int, len(attrs))
	for g, c := range attrs {
		gi := slices.Index(s.Reference.Groups, c)
		v.level[g] = make([]int, rs.Len())
		for r := range rs.Len() {
			v.level[g][r] = slices.Index(levels[g], rs.Groups[r][gi])
		}
	}
	v.fillScales(a.keys)
	for k, kk := range a.keys {
		for r := range rs.Len() {
			v.agree[k][r], v.pairs[k][r] = contradictionCounts(kk, func(it int) float64 { return v.raw[r][it] })
		}
	}
	return v
}

// fillScales computes each unit's scale scores and acquiescence from its item scores, and sizes the
// contradiction counts.
func (v *validitySide) fillScales(keys []keying) {
	if v.n > 0 {
		v.item = make([][]float64, len(v.score[0]))
		for it := range v.item {
			v.item[it] = column2(v.score, it)
		}
	}
	v.scale, v.acq = make([][]float64, len(keys)), make([][]float64, len(keys))
	v.agree, v.pairs = make([][]float64, len(keys)), make([][]float64, len(keys))
	for k, kk := range keys {
		v.scale[k], v.acq[k] = make([]float64, v.n), make([]float64, v.n)
		v.agree[k], v.pairs[k] = make([]float64, v.n), make([]float64, v.n)
		for u := range v.n {
			v.scale[k][u] = meanOver(kk.items, func(it int) float64 { return v.score[u][it] })
			p := meanOver(kk.pos, func(it int) float64 { return v.raw[u][it] - kk.mid[it] })
			n := meanOver(kk.neg, func(it int) float64 { return v.raw[u][it] - kk.mid[it] })
			v.acq[k][u] = (p + n) / 2
		}
	}
}

// meanOver is the mean of f over items, NaN values left out; NaN when none is left.
func meanOver(items []int, f func(it int) float64) float64 {
	var sum float64
	n := 0
	for _, it := range items {
		if x := f(it); !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func (v *validitySide) w(u int) float64 {
	if v.weight == nil {
		return 1
	}
	return v.weight[u]
}

// identity is the list 0 … n−1: the sample itself, whose statistics are the point values.
func identity(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// sideStat is a statistic of one side on a list of its units (repetition allowed); why says why it is NaN.
type sideStat func(v *validitySide, idx []int) (x float64, n int, why string)

// weightedMean is Σ w·y / Σ w over the units of idx with a value; NaN without one.
func (v *validitySide) weightedMean(y []float64, idx []int) (float64, int) {
	var sw, s float64
	n := 0
	for _, u := range idx {
		if math.IsNaN(y[u]) {
			continue
		}
		sw += v.w(u)
		s += v.w(u) * y[u]
		n++
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return s / sw, n
}

// sdStat is the (weighted) standard deviation of y over the units with a value, psychometrics.WeightedSD: √(Σ
// w (y − ȳ)² / (Σw − Σw²/Σw)), R's cov.wt(method = "unbiased"); with every weight 1 the n − 1 sample SD. It
// needs two distinct units with a value: a resample of one unit drawn again and again has an SD of 0 that
// says nothing about the spread.
func sdStat(y func(v *validitySide) []float64) sideStat {
	return func(v *validitySide, idx []int) (float64, int, string) {
		ys, ws, _ := v.gather(y(v), -1, idx)
		if v.distinct(y(v), -1, 0, idx)[0] < 2 {
			return math.NaN(), len(ys), fmt.Sprintf("%s: fewer than two distinct %s with a score", v.name, v.unit)
		}
		sd, err := psychometrics.WeightedSD(ys, ws)
		if err != nil {
			return math.NaN(), len(ys), fmt.Sprintf("%s: no spread: %s", v.name, strings.TrimPrefix(err.Error(), "psychometrics: "))
		}
		return sd, len(ys), ""
	}
}

// groupMeans returns the (weighted) mean of y per level of attribute g over the units of idx with a value and
// a level, their weights and head counts per level, and the (weighted) grand mean over them.
func (v *validitySide) groupMeans(y []float64, g, levels int, idx []int) (mean, wsum []float64, n []int, grand float64) {
	mean, wsum, n = make([]float64, levels), make([]float64, levels), make([]int, levels)
	var sw float64
	for _, u := range idx {
		l := v.level[g][u]
		if l < 0 || math.IsNaN(y[u]) {
			continue
		}
		mean[l] += v.w(u) * y[u]
		wsum[l] += v.w(u)
		n[l]++
		grand += v.w(u) * y[u]
		sw += v.w(u)
	}
	for l := range mean {
		mean[l] /= wsum[l]
	}
	return mean, wsum, n, grand / sw
}

// fewInLevel names the first level with fewer than two units (distinct units: see distinct), "" when none has.
func fewInLevel(n []int, levels []string) string {
	for l, c := range n {
		if c < 2 {
			return levels[l]
		}
	}
	return ""
}

// r2Stat is the share of the (weighted) variance of scale k's scores that attribute g's levels explain,
// psychometrics.VarianceExplained: Σ_l W_l (ȳ_l − ȳ)² / Σ w (y − ȳ)², summary(lm(y ~ factor(level), weights =
// w))$r.squared. It needs two distinct units in every level: a level of one unit (or of one unit drawn twice
// by a resample) is fitted exactly, and a level missing from a resample changes what is being explained.
func r2Stat(k, g int, levels []string) sideStat {
	return func(v *validitySide, idx []int) (float64, int, string) {
		ys, ws, gs := v.gather(v.scale[k], g, idx)
		if l := fewInLevel(v.distinct(v.scale[k], g, len(levels), idx), levels); l != "" {
			return math.NaN(), len(ys), fmt.Sprintf("%s: fewer than two distinct %s with a score in level %s", v.name, v.unit, l)
		}
		r2, err := psychometrics.VarianceExplained(ys, gs, ws)
		if err != nil {
			return math.NaN(), len(ys), fmt.Sprintf("%s: the scale scores have no variance", v.name)
		}
		return r2, len(ys), ""
	}
}

// diffStat is level l's (weighted) mean scale score minus the first level's: lm's treatment contrast, each
// level needing two distinct units with a score.
func diffStat(k, g, l int, levels []string) sideStat {
	return func(v *validitySide, idx []int) (float64, int, string) {
		mean, _, n, _ := v.groupMeans(v.scale[k], g, len(levels), idx)
		d := v.distinct(v.scale[k], g, len(levels), idx)
		if c := fewInLevel([]int{d[0], d[l]}, []string{levels[0], levels[l]}); c != "" {
			return math.NaN(), n[0] + n[l], fmt.Sprintf("%s: fewer than two distinct %s with a score in level %s", v.name, v.unit, c)
		}
		return mean[l] - mean[0], n[0] + n[l], ""
	}
}

// acqStat is scale k's (weighted) mean acquiescence over the units with one.
func acqStat(k int) sideStat {
	return func(v *validitySide, idx []int) (float64, int, string) {
		m, n := v.weightedMean(v.acq[k], idx)
		if n == 0 {
			return m, 0, fmt.Sprintf("%s: no %s with answers on both keyings", v.name, v.unit)
		}
		return m, n, ""
	}
}

// contraStat is scale k's contradiction rate: Σ w·agreeing pairs / Σ w·pairs.
func contraStat(k int) sideStat {
	return func(v *validitySide, idx []int) (float64, int, string) {
		var a, p float64
		n := 0
		for _, u := range idx {
			if v.pairs[k][u] > 0 {
				a += v.w(u) * v.agree[k][u]
				p += v.w(u) * v.pairs[k][u]
				n++
			}
		}
		if n == 0 {
			return math.NaN(), 0, fmt.Sprintf("%s: no %s with answers on both keyings", v.name, v.unit)
		}
		return a / p, n, ""
	}
}

// loadings is the one-factor principal-axis loadings of the (weighted) pairwise correlations of the units'
// keyed scores on items (psychometrics.Correlations, then psychometrics.OneFactorLoadings: psych's fa(r,
// nfactors = 1, fm = "pa"), oriented to a non-negative sum).
func (v *validitySide) loadings(items []int, idx []int) ([]float64, string) {
	x := v.scaleRows(items)
	v.rows, v.ws = v.rows[:0], v.ws[:0]
	for _, u := range idx {
		v.rows = append(v.rows, x[u])
		v.ws = append(v.ws, v.w(u))
	}
	ws := v.ws
	if v.weight == nil {
		ws = nil
	}
	r, err := psychometrics.Correlations(v.rows, ws)
	if err == nil {
		var l []float64
		if l, err = psychometrics.OneFactorLoadings(r); err == nil {
			return l, ""
		}
	}
	return nil, fmt.Sprintf("%s: loadings: %s", v.name, strings.TrimPrefix(err.Error(), "psychometrics: "))
}

// scaleRows returns each unit's keyed scores on items, computed once per list of items.
func (v *validitySide) scaleRows(items []int) [][]float64 {
	key := fmt.Sprint(items)
	if x, ok := v.byItems[key]; ok {
		return x
	}
	x := make([][]float64, v.n)
	for u := range x {
		x[u] = make([]float64, len(items))
		for j, it := range items {
			x[u][j] = v.score[u][it]
		}
	}
	if v.byItems == nil {
		v.byItems = map[string][][]float64{}
	}
	v.byItems[key] = x
	return x
}

// validityLine is a line of validity.csv with the statistics that fill it.
type validityLine struct {
	row          Validity
	model, human sideStat
	// value compares the two sides (congruence); nil for the statistics reported per side. ratio makes the
	// value the model's statistic over the humans' (sd_ratio).
	value func(mv, hv *validitySide, mi, hi []int) (float64, string)
	ratio bool
	mv    *validitySide
}

// sharedAttributes returns the reference's group columns that some persona has as an attribute, and each
// one's levels: the values both some persona and some respondent have (every persona's value when the
// reference has no respondents), in byte order (R: sort(method = "radix")), and a note naming the values
// only one side has.
func (a *Analysis) sharedAttributes() (attrs []string, levels [][]string, notes []string) {
	s := a.Spec
	ref := s.Reference
	for gi, col := range ref.Groups {
		persona := map[string]bool{}
		for _, p := range s.Personas {
			if v, ok := p.Attributes[col]; ok && strings.TrimSpace(v) != "" {
				persona[strings.TrimSpace(v)] = true
			}
		}
		if len(persona) == 0 {
			continue
		}
		human := map[string]bool{}
		if rs := ref.Respondents; rs != nil {
			for r := range rs.Len() {
				if v := rs.Groups[r][gi]; v != "" {
					human[v] = true
				}
			}
		}
		var both, only []string
		for v := range persona {
			if ref.Respondents == nil || human[v] {
				both = append(both, v)
			} else {
				only = append(only, "personas' "+v)
			}
		}
		for v := range human {
			if !persona[v] {
				only = append(only, "respondents' "+v)
			}
		}
		slices.Sort(both)
		slices.Sort(only)
		note := ""
		if len(only) > 0 {
			note = "levels on one side only, left out: " + strings.Join(only, ", ")
		}
		attrs, levels, notes = append(attrs, col), append(levels, both), append(notes, note)
	}
	return attrs, levels, notes
}

// validity fills Validity when the spec has a reference: see Validity and docs/architecture.md.
func (a *Analysis) validity() {
	s := a.Spec
	if s.Reference == nil {
		return
	}
	if a.keys == nil {
		a.keys = a.keyings()
	}
	attrs, levels, levelNotes := a.sharedAttributes()
	human := a.humanSide(attrs, levels)
	var lines []validityLine
	for m := range s.Models {
		mv := a.modelSide(m, attrs, levels)
		add := func(l validityLine) {
			l.row.Model, l.mv = s.Models[m].ID, mv
			lines = append(lines, l)
		}
		for k, sc := range a.ScaleIDs {
			kk := a.keys[k]
			for g, col := range attrs {
				add(validityLine{row: Validity{Scale: sc, Attribute: col, Statistic: ValidityR2, Note: levelNotes[g]},
					model: r2Stat(k, g, levels[g]), human: r2Stat(k, g, levels[g])})
				for l := 1; l < len(levels[g]); l++ {
					add(validityLine{row: Validity{Scale: sc, Attribute: col, Level: levels[g][l], Baseline: levels[g][0],
						Statistic: ValidityDifference, Note: levelNotes[g]},
						model: diffStat(k, g, l, levels[g]), human: diffStat(k, g, l, levels[g])})
				}
			}
			all := Validity{Scale: sc, Attribute: experiment.GroupAll}
			sdScale := sdStat(func(v *validitySide) []float64 { return v.scale[k] })
			row := all
			row.Statistic = ValiditySDRatio
			add(validityLine{row: row, model: sdScale, human: sdScale, ratio: true})
			for _, it := range kk.items {
				sdItem := sdStat(func(v *validitySide) []float64 { return v.item[it] })
				row.ItemID = s.Questionnaire.Items[it].ID
				add(validityLine{row: row, model: sdItem, human: sdItem, ratio: true})
			}
			for _, st := range []struct {
				name string
				f    sideStat
			}{{ValidityAcquiescence, acqStat(k)}, {ValidityContradiction, contraStat(k)}} {
				row := all
				row.Statistic = st.name
				l := validityLine{row: row, model: st.f, human: st.f}
				if len(kk.pos) == 0 || len(kk.neg) == 0 {
					l.model, l.human = nil, nil
					l.row.Note = fmt.Sprintf("scale %s has no %s items: both keyings are needed", sc, map[bool]string{true: "positively keyed", false: "reverse-keyed"}[len(kk.pos) == 0])
				}
				add(l)
			}
			row = all
			row.Statistic = ValidityCongruence
			add(validityLine{row: row, value: congruenceOf(kk.items)})
		}
	}
	a.fillValidity(lines, human)
	for _, l := range lines {
		a.Validity = append(a.Validity, l.row)
	}
}

// column2 is column it of a units × items matrix.
func column2(x [][]float64, it int) []float64 {
	out := make([]float64, len(x))
	for u := range x {
		out[u] = x[u][it]
	}
	return out
}

// congruenceOf is Tucker's congruence of the two sides' one-factor loadings on items.
func congruenceOf(items []int) func(mv, hv *validitySide, mi, hi []int) (float64, string) {
	return func(mv, hv *validitySide, mi, hi []int) (float64, string) {
		if len(items) < 2 {
			return math.NaN(), "fewer than two items: no factor to compare"
		}
		lm, why := mv.loadings(items, mi)
		if why != "" {
			return math.NaN(), why
		}
		lh, why := hv.loadings(items, hi)
		if why != "" {
			return math.NaN(), why
		}
		c, err := psychometrics.Congruence(lm, lh)
		if err != nil {
			return math.NaN(), strings.TrimPrefix(err.Error(), "psychometrics: ")
		}
		return c, ""
	}
}

// fillValidity computes every line's point values and, with analysis.bootstrap samples, their intervals:
// resample b draws the personas (for every model) and the respondents (with their weights) with replacement,
// keyed by ValidityResampleKey, and each interval is bootstrap.Interval of the resampled values.
func (a *Analysis) fillValidity(lines []validityLine, human *validitySide) {
	np := len(a.Spec.Personas)
	for i := range lines {
		l := &lines[i]
		var notes []string
		if l.model != nil {
			x, n, why := l.model(l.mv, identity(np))
			l.row.ModelValue, l.row.NModel, notes = finite(x), n, append(notes, why)
		}
		if l.human != nil {
			if human == nil {
				notes = append(notes, "humans: the reference has no respondents (a file of counts)")
			} else {
				x, n, why := l.human(human, identity(human.n))
				l.row.HumanValue, l.row.NHuman, notes = finite(x), n, append(notes, why)
			}
		}
		if l.value != nil {
			if human == nil {
				notes = append(notes, "humans: the reference has no respondents (a file of counts)")
			} else {
				x, why := l.value(l.mv, human, identity(np), identity(human.n))
				l.row.Value, notes = finite(x), append(notes, why)
			}
			if l.row.Statistic == ValidityCongruence {
				l.row.NModel, l.row.NHuman = np, 0
				if human != nil {
					l.row.NHuman = human.n
				}
			}
		}
		if l.ratio && l.row.ModelValue != nil && l.row.HumanValue != nil {
			x, why := ratio(*l.row.ModelValue, *l.row.HumanValue)
			l.row.Value, notes = finite(x), append(notes, why)
		}
		if l.row.Statistic == ValidityDifference && l.row.ModelValue != nil && l.row.HumanValue != nil {
			agree := sign(*l.row.ModelValue) == sign(*l.row.HumanValue)
			l.row.Agree = &agree
		}
		l.row.Note = joinNotes(append([]string{l.row.Note}, notes...)...)
	}
	samples, seed := a.Spec.Analysis.Bootstrap.Resolve()
	if samples == 0 || np == 0 {
		return
	}
	mres := bootstrap.New(seed, ValidityResampleKey("personas"), np)
	var hres *bootstrap.Resampler
	if human != nil && human.n > 0 {
		hres = bootstrap.New(seed, ValidityResampleKey("respondents"), human.n)
	}
	type draws struct{ model, human, value []float64 }
	vals := make([]draws, len(lines))
	for i, l := range lines {
		if l.model != nil {
			vals[i].model = make([]float64, samples)
		}
		if hres != nil && l.human != nil {
			vals[i].human = make([]float64, samples)
		}
		if hres != nil && (l.value != nil || l.ratio) {
			vals[i].value = make([]float64, samples)
		}
	}
	// The resamples are drawn in order, a chunk at a time, from one stream per side (resample b is the b-th
	// block of its stream); the lines of a chunk are then shared out among workers, each with its own copy of
	// the sides (their scratch buffers), and every value lands at its line and b: the output is the same
	// for any number of workers.
	const chunk = 64
	sides := map[*validitySide]bool{}
	for _, l := range lines {
		sides[l.mv] = true
	}
	if hres != nil {
		sides[human] = true
	}
	for v := range sides {
		for _, kk := range a.keys {
			v.scaleRows(kk.items) // filled now, so that the workers only read byItems
		}
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(lines)))
	own := make([]map[*validitySide]*validitySide, workers)
	for w := range own {
		own[w] = map[*validitySide]*validitySide{}
		for v := range sides {
			c := *v
			c.ys, c.ws, c.gs, c.rows, c.seen = nil, nil, nil, nil, nil
			own[w][v] = &c
		}
	}
	mi, hi := make([][]int, chunk), make([][]int, chunk)
	for j := range chunk {
		mi[j] = make([]int, np)
		if hres != nil {
			hi[j] = make([]int, human.n)
		}
	}
	for start := 0; start < samples; start += chunk {
		n := min(chunk, samples-start)
		for j := range n {
			mres.Fill(mi[j])
			if hres != nil {
				hres.Fill(hi[j])
			}
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(lines); i = int(next.Add(1) - 1) {
					l := lines[i]
					mv, hv := own[w][l.mv], own[w][human]
					for j := range n {
						b := start + j
						if l.model != nil {
							vals[i].model[b], _, _ = l.model(mv, mi[j])
						}
						if hres == nil {
							continue
						}
						if l.human != nil {
							vals[i].human[b], _, _ = l.human(hv, hi[j])
						}
						switch {
						case l.value != nil:
							vals[i].value[b], _ = l.value(mv, hv, mi[j], hi[j])
						case l.ratio:
							vals[i].value[b], _ = ratio(vals[i].model[b], vals[i].human[b])
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	for i := range lines {
		r := &lines[i].row
		var notes []string
		interval := func(side string, v []float64, point *float64, lo, hi **float64) {
			if point == nil || v == nil {
				return
			}
			n := definedCount(v)
			if !enoughResamples(n, samples) {
				notes = append(notes, fmt.Sprintf("%s: no interval: defined on %d of %d resamples, fewer than half", side, n, samples))
				return
			}
			*lo, *hi = bootstrap.Interval(v)
			if n < samples {
				notes = append(notes, fmt.Sprintf("%s interval over %d of %d resamples", side, n, samples))
			}
		}
		interval("model", vals[i].model, r.ModelValue, &r.ModelLo, &r.ModelHi)
		interval("humans", vals[i].human, r.HumanValue, &r.HumanLo, &r.HumanHi)
		interval("value", vals[i].value, r.Value, &r.ValueLo, &r.ValueHi)
		r.Note = joinNotes(append([]string{r.Note}, notes...)...)
	}
}

// MinDefinedShare is the share of the resamples on which a statistic of validity.csv must be defined for it to
// have an interval. A resample that leaves it undefined (a level without two distinct personas) is left out,
// and the resamples kept are those that happened to draw the rare units: when they are a minority, their
// spread is that of a selected few, not the statistic's sampling spread, so no interval is given.
const MinDefinedShare = 0.5

// enoughResamples says whether n defined values of samples resamples may make an interval (MinDefinedShare).
func enoughResamples(n, samples int) bool { return float64(n) >= MinDefinedShare*float64(samples) }

// ratio is m/h, NaN with a reason where h is 0 (and NaN where either is).
func ratio(m, h float64) (float64, string) {
	if h == 0 {
		return math.NaN(), "humans: no variance, no ratio"
	}
	return m / h, ""
}

// definedCount is the number of values that are not NaN.
func definedCount(v []float64) int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
