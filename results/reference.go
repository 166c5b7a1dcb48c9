package results

import (
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
)

// ReferenceRow is one line of reference.csv: a model's answer distribution on one item against the humans'
// of one group (experiment.Reference).
type ReferenceRow struct {
	Model  string
	ItemID string
	Scale  string
	Group  string
	// Options are the item's option ids, in the order of Answers.P and Human.
	Options []string
	// Answers is the model's mean distribution over the cells of the group's personas (every seed).
	Answers PMF
	// Human is the humans' distribution, nil when none answered: each option's share of the survey weight of
	// those who answered (reference.weight; without weights the counts over their total). Humans is their head
	// count, not a sum of weights: how many people the figure rests on.
	Human  []float64
	Humans int
	// ModelNonresponse and HumanNonresponse are the shares of the options ignored for scale (don't know,
	// refuse): 0 for an item without such options, nil where a side has no distribution. The ordinal figures
	// below leave these options out.
	ModelNonresponse, HumanNonresponse *float64
	// The comparison of the two sides over the item's K scored options (those not ignored for scale, in their
	// order, unit spacing), each distribution renormalised over them: W1 the 1-Wasserstein distance, Alignment
	// OpinionQA's 1 − W1/(K−1), TVD the total variation distance and SimBench 100·(1 − TVD(P,Q)/TVD(U,Q)) with U
	// uniform over the scored options (nil where the humans answer uniformly). JSD is the Jensen–Shannon
	// divergence in bits over every option. nil where a side has no distribution.
	W1, Alignment, TVD, SimBench, JSD *float64
	// The uniform answer U's own W1, alignment and TVD against the humans: the baseline a model must beat (its
	// SimBench is 0 by definition).
	UniformW1, UniformAlignment, UniformTVD *float64
	// SplitHalfW1 is the mean over the split halves (analysis.bootstrap.samples of them, seeded by
	// analysis.bootstrap.seed) of the W1 between two random halves of the group's humans; SplitHalfAlignment
	// its alignment: a human–human baseline. It is not a bound on a model: each half has half the people, so
	// the distance carries the sampling noise of two half-samples, and a model that answers as the humans do
	// is closer on average. nil without splits.
	SplitHalfW1, SplitHalfAlignment *float64
	// Perfect is the perfect-model floor of W1, alignment, TVD, SimBench and JSD (positions PerfectW1 …): the
	// figures of a model that gives as many answers as the row pools (Answers.Cells) and draws each from the
	// humans' distribution Human, over analysis.bootstrap.samples seeded draws (perfectModel). A model at the
	// floor is as close to the humans as sampling its number of answers allows. Empty without draws.
	Perfect [perfectFigures]Floor
	// Entropies are in bits over every option; means the expected scores over the scored options (reverse-keyed
	// items reversed). nil where a side has no distribution.
	ModelEntropy, HumanEntropy *float64
	ModelMean, HumanMean       *float64
	// Intervals are the 95 % bootstrap intervals of W1, Alignment, JSD, SimBench, ModelMean and HumanMean, in
	// that order (IntervalW1 …); zero without resamples.
	Intervals [rowIntervals]Interval
}

// Interval is a 95 % percentile bootstrap interval; nil bounds where no resample defines the figure or there
// are no resamples.
type Interval struct{ Lo, Hi *float64 }

// The figures of a reference.csv line that carry intervals: their positions in ReferenceRow.Intervals.
const (
	IntervalW1 = iota
	IntervalAlignment
	IntervalJSD
	IntervalSimBench
	IntervalModelMean
	IntervalHumanMean
	rowIntervals
)

// ReferenceScale is one line of reference_scales.csv: a scale's reliability among one model's personas of a
// group next to the humans' of that group, and the means of the scale's reference.csv figures. Scale
// ScaleOverall is a line over every item of the questionnaire, without α and ω.
type ReferenceScale struct {
	Model     string
	Scale     string
	ScaleName string
	Group     string
	// Personas is the number of the group's personas with a score; ItemsUsed the scale's items with variance
	// among them. The model's matrix is personas × items of expected scores: Σ p·score over each persona's mean
	// distribution across seeds (the mean score over seeds when the cells have no probabilities).
	Personas   int
	ItemsUsed  int
	ModelAlpha *float64
	ModelOmega *float64
	// Note says why ModelAlpha or ModelOmega is empty where R psych refuses it (psychometrics.Reliability.Note),
	// e.g. a group with fewer personas than items; empty when both are numbers. The humans' numbers carry no note:
	// they are empty where psych refuses them, for the same reasons.
	Note string
	// The humans' numbers: from the reference's respondents as the model's are from its personas (nil where
	// undefined, and from a file of counts, which has no respondents).
	Humans         int
	HumanItemsUsed int
	HumanAlpha     *float64
	HumanOmega     *float64
	// AlphaOmega are the 95 % bootstrap intervals of ModelAlpha, ModelOmega, HumanAlpha and HumanOmega, in that
	// order (IntervalModelAlpha …).
	AlphaOmega [4]Interval
	// ItemsCompared is the number of the scale's items with an alignment; Means the mean over the scale's items
	// of reference.csv's W1, Alignment, TVD, SimBench, UniformW1, UniformAlignment, UniformTVD, SplitHalfW1 and
	// SplitHalfAlignment, in that order (MeanW1 …), each over the items where it is defined.
	ItemsCompared int
	Means         [meanStats]*float64
	// MeanIntervals are the 95 % bootstrap intervals of Means[MeanW1], Means[MeanAlignment] and
	// Means[MeanSimBench]: in each resample the mean over the scale's items of the item's figure on that
	// resample (reference.csv's intervals' resamples). The baselines' are zero.
	MeanIntervals [meanStats]Interval
	// Perfect is the perfect-model floor of the means of W1, alignment, TVD and SimBench (positions PerfectW1 …
	// PerfectSimBench): each Mean the mean over the scale's items of their floors' means, its interval that of
	// the mean over the items on each draw (scaleFloors).
	Perfect [PerfectJSD]Floor
}

// ScaleOverall is the scale column of reference_scales.csv's lines over every item of the questionnaire.
const ScaleOverall = experiment.Overall

// The positions of ReferenceScale.AlphaOmega's intervals.
const (
	IntervalModelAlpha = iota
	IntervalModelOmega
	IntervalHumanAlpha
	IntervalHumanOmega
)

// The figures reference_scales.csv averages over a scale's items: their positions in ReferenceScale.Means.
const (
	MeanW1 = iota
	MeanAlignment
	MeanTVD
	MeanSimBench
	MeanUniformW1
	MeanUniformAlignment
	MeanUniformTVD
	MeanSplitHalfW1
	MeanSplitHalfAlignment
	meanStats
)

func (r *ReferenceRow) means() [meanStats]*float64 {
	return [meanStats]*float64{r.W1, r.Alignment, r.TVD, r.SimBench, r.UniformW1, r.UniformAlignment, r.UniformTVD,
		r.SplitHalfW1, r.SplitHalfAlignment}
}

// reference fills Reference, ReferenceScales and ReferenceOverall when the spec has a human reference.
func (a *Analysis) reference() {
	s := a.Spec
	ref := s.Reference
	if ref == nil {
		return
	}
	samples, seed := s.Analysis.Bootstrap.Resolve()
	groups := ref.GroupLabels()
	h := newHumanSide(s, groups)
	split := h.splitHalves(groups, samples, seed)
	boot := a.newReferenceBoot(h, groups, samples, seed)
	perfect := a.perfectModel(h, groups, samples, seed)
	for m := range s.Models {
		for it, item := range s.Questionnaire.Items {
			opts := optionIDs(s, it)
			for gi, g := range groups {
				row := ReferenceRow{Model: s.Models[m].ID, ItemID: item.ID, Scale: item.Scale, Group: g, Options: opts,
					Answers: a.GroupPMF(m, it, g)}
				row.Human, row.Humans = h.groupDist(it, g)
				row.compare(s, it)
				if w := split[gi][it]; w != nil {
					row.SplitHalfW1 = w
					row.SplitHalfAlignment = alignment(s, it, *w)
				}
				perfect[m][gi][it].fill(&row)
				boot.rowIntervals(&row, m, it, gi)
				a.Reference = append(a.Reference, row)
			}
		}
	}
	byKey := map[[3]string]*ReferenceRow{}
	for i := range a.Reference {
		r := &a.Reference[i]
		byKey[[3]string{r.Model, r.ItemID, r.Group}] = r
	}
	allItems := make([]int, len(s.Questionnaire.Items))
	for it := range allItems {
		allItems[it] = it
	}
	for m := range s.Models {
		for k := range len(a.ScaleIDs) + 1 {
			overall := k == len(a.ScaleIDs)
			sc, name, items := ScaleOverall, "", allItems
			if !overall {
				sc, name, items = a.ScaleIDs[k], a.ScaleNames[k], a.ScaleItems(k)
			}
			for gi, g := range groups {
				rs := ReferenceScale{Model: s.Models[m].ID, Scale: sc, ScaleName: name, Group: g}
				var rows []*ReferenceRow
				var draws []*perfectDraws
				for _, it := range items {
					rows = append(rows, byKey[[3]string{rs.Model, s.Questionnaire.Items[it].ID, g}])
					draws = append(draws, perfect[m][gi][it])
				}
				rs.average(rows)
				scaleFloors(&rs, draws, rows)
				boot.meanIntervals(&rs, m, k, gi)
				if overall {
					rs.Humans = h.headCount(items, g, rows)
					rs.Note = "every item of the questionnaire: alpha and omega are per scale"
					for p := range s.Personas {
						if s.InGroup(p, g) {
							rs.Personas++
						}
					}
					a.ReferenceOverall = append(a.ReferenceOverall, rs)
					continue
				}
				ps := psychometrics.ScaleReliability(a.personaScores(m, items, boot.personas[gi]))
				rs.Personas, rs.ItemsUsed, rs.Note = ps.Respondents, len(ps.Items), ps.Note()
				if ps.Err == nil {
					rs.ModelAlpha, rs.ModelOmega = finite(ps.Raw), finite(ps.Omega)
				}
				if hr, ok := h.reliability(items, h.members[g]); ok {
					rs.Humans, rs.HumanItemsUsed = hr.Respondents, len(hr.Items)
					if hr.Err == nil {
						rs.HumanAlpha, rs.HumanOmega = finite(hr.Raw), finite(hr.Omega)
					}
				} else if hs, ok := h.scales[[2]string{sc, g}]; ok {
					rs.Humans, rs.HumanItemsUsed, rs.HumanAlpha, rs.HumanOmega = hs.Respondents, hs.ItemsUsed, hs.Alpha, hs.OmegaTotal
				} else {
					rs.Humans = h.headCount(items, g, rows)
				}
				boot.scaleIntervals(&rs, m, k, items, gi)
				a.ReferenceScales = append(a.ReferenceScales, rs)
			}
		}
	}
}

// personaScores is the matrix of the model's expected scores on items, one row per persona of units (persona
// indices, repeats counting again): Σ p·score over each persona's mean distribution across seeds, Missing
// where it has none.
func (a *Analysis) personaScores(m int, items []int, units []int) [][]float64 {
	x := make([][]float64, len(units))
	for r, p := range units {
		row := make([]float64, len(items))
		for j, it := range items {
			row[j] = psychometrics.Missing
			if v := expectedScore(a.Spec, it, a.PersonaPMF(m, it, p).P); v != nil {
				row[j] = *v
			}
		}
		x[r] = row
	}
	return x
}

// average fills ItemsCompared and Means from the scale's rows.
func (rs *ReferenceScale) average(rows []*ReferenceRow) {
	var sum [meanStats]float64
	var n [meanStats]int
	for _, r := range rows {
		if r == nil {
			continue
		}
		if r.Alignment != nil {
			rs.ItemsCompared++
		}
		for i, v := range r.means() {
			if v != nil {
				sum[i] += *v
				n[i]++
			}
		}
	}
	for i := range sum {
		if n[i] > 0 {
			rs.Means[i] = finite(sum[i] / float64(n[i]))
		}
	}
}

// pairFigures are the figures of a model distribution p against a human one q on one item.
type pairFigures struct{ w1, alignment, tvd, simbench, jsd float64 }

// comparePair computes pairFigures of p and q (both non-nil) on item it: NaN where a figure is undefined.
func comparePair(s *experiment.Spec, it int, p, q []float64) pairFigures {
	f := pairFigures{w1: nan, alignment: nan, tvd: nan, simbench: nan, jsd: nan}
	if v, err := psychometrics.JensenShannon(p, q); err == nil {
		f.jsd = v
	}
	mp, hp := scoredPMF(s, it, p), scoredPMF(s, it, q)
	if mp == nil || hp == nil {
		return f
	}
	if v, err := psychometrics.Wasserstein1(mp, hp); err == nil {
		f.w1 = v
		if al := alignment(s, it, v); al != nil {
			f.alignment = *al
		}
	}
	if v, err := psychometrics.TotalVariation(mp, hp); err == nil {
		f.tvd = v
	}
	if v, err := psychometrics.SimBench(mp, hp); err == nil {
		f.simbench = v
	}
	return f
}

// alignment is 1 − w1/(K−1) for item it's K scored options; nil with fewer than two.
func alignment(s *experiment.Spec, it int, w1 float64) *float64 {
	return stat(psychometrics.Alignment(w1, float64(scoredOptions(s, it)-1)))
}

// scoredOptions is the number of item it's options not ignored for scale.
func scoredOptions(s *experiment.Spec, it int) int {
	k := 0
	for _, o := range s.OptionsFor(it).Options {
		if !o.IgnoredForScale {
			k++
		}
	}
	return k
}

// nonresponse is p's mass on item it's options ignored for scale; nil without p.
func nonresponse(s *experiment.Spec, it int, p []float64) *float64 {
	if p == nil {
		return nil
	}
	var v float64
	for k, o := range s.OptionsFor(it).Options {
		if o.IgnoredForScale {
			v += p[k]
		}
	}
	return &v
}

// compare fills the distances, entropies, means and baselines of a row whose distributions are set.
func (r *ReferenceRow) compare(s *experiment.Spec, it int) {
	if r.Answers.P != nil {
		r.ModelEntropy = stat(psychometrics.Entropy(r.Answers.P))
		r.ModelMean = expectedScore(s, it, r.Answers.P)
		r.ModelNonresponse = nonresponse(s, it, r.Answers.P)
	}
	if r.Human != nil {
		r.HumanEntropy = stat(psychometrics.Entropy(r.Human))
		r.HumanMean = expectedScore(s, it, r.Human)
		r.HumanNonresponse = nonresponse(s, it, r.Human)
		if hp := scoredPMF(s, it, r.Human); hp != nil {
			u := make([]float64, len(hp))
			for k := range u {
				u[k] = 1 / float64(len(u))
			}
			r.UniformW1 = stat(psychometrics.Wasserstein1(u, hp))
			if r.UniformW1 != nil {
				r.UniformAlignment = alignment(s, it, *r.UniformW1)
			}
			r.UniformTVD = stat(psychometrics.TotalVariation(u, hp))
		}
	}
	if r.Answers.P == nil || r.Human == nil {
		return
	}
	f := comparePair(s, it, r.Answers.P, r.Human)
	r.W1, r.Alignment, r.TVD, r.SimBench, r.JSD = finite(f.w1), finite(f.alignment), finite(f.tvd), finite(f.simbench), finite(f.jsd)
}

func stat(v float64, err error) *float64 {
	if err != nil {
		return nil
	}
	return finite(v)
}

// scoredPMF returns p over item it's scored options (those not ignored for scale), renormalised; nil when they
// have no mass. With no option ignored it is p itself.
func scoredPMF(s *experiment.Spec, it int, p []float64) []float64 {
	opts := s.OptionsFor(it).Options
	var out []float64
	var sum float64
	for k, o := range opts {
		if o.IgnoredForScale {
			continue
		}
		out = append(out, p[k])
		sum += p[k]
	}
	if sum <= 0 {
		return nil
	}
	if len(out) == len(p) {
		return p
	}
	for k := range out {
		out[k] /= sum
	}
	return out
}

// expectedScore is Σ p_k · score_k over item it's scored options, divided by their mass (the spec's scoring:
// reverse-keyed items reversed); nil without p or without mass on a scored option. It keys the item's own
// wording; expectedCellScore keys a cell's.
func expectedScore(s *experiment.Spec, it int, p []float64) *float64 {
	return expectedCellScore(s, experiment.Cell{Item: it}, p)
}

// expectedCellScore is expectedScore with cell c's scoring (a negated wording variant keyed opposite).
func expectedCellScore(s *experiment.Spec, c experiment.Cell, p []float64) *float64 {
	return expectedBy(s.OptionsFor(c.Item).Options, p, func(o experiment.Option) (int, bool) { return s.CellScore(c, o.ID) })
}

// expectedBy is Σ p_k · value_k over the options opts whose value is defined (ok), divided by their mass; nil
// without p or without mass on such an option.
func expectedBy(opts []experiment.Option, p []float64, value func(experiment.Option) (int, bool)) *float64 {
	if p == nil {
		return nil
	}
	var sum, mass float64
	for k, o := range opts {
		v, ok := value(o)
		if !ok {
			continue
		}
		sum += p[k] * float64(v)
		mass += p[k]
	}
	if mass <= 0 {
		return nil
	}
	return finite(sum / mass)
}

// ScoredPMF is p over item it's scored options (those not ignored for scale, in order), renormalised: what W1
// compares; nil when they have no mass.
func ScoredPMF(s *experiment.Spec, it int, p []float64) []float64 { return scoredPMF(s, it, p) }

// ExpectedScore is Σ p_k · score_k over cell c's item's scored options divided by their mass, with the cell's
// scoring (reverse-keyed items and negated wordings reversed, experiment.Spec.CellScore): the row's
// expected_score. nil without p or without mass on a scored option. For a point mass it is the option's score.
func ExpectedScore(s *experiment.Spec, c experiment.Cell, p []float64) *float64 {
	return expectedCellScore(s, c, p)
}
