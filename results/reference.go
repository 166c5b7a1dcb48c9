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
	// W1 is the 1-Wasserstein distance over the scored options (those not ignored for scale, in their order,
	// unit spacing), each distribution renormalised over them; JSD the Jensen–Shannon divergence in bits over
	// every option. Entropies are in bits; means the expected scores (reverse-keyed items reversed). nil where a
	// side has no distribution.
	W1, JSD                    *float64
	ModelEntropy, HumanEntropy *float64
	ModelMean, HumanMean       *float64
}

// ReferenceScale is one line of reference_scales.csv: a scale's reliability among one model's personas of a
// group next to the humans' of that group.
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
}

// reference fills Reference and ReferenceScales when the spec has a human reference.
func (a *Analysis) reference() {
	s := a.Spec
	ref := s.Reference
	if ref == nil {
		return
	}
	groups := ref.GroupLabels()
	h := newHumanSide(s, groups)
	for m := range s.Models {
		for it, item := range s.Questionnaire.Items {
			opts := optionIDs(s, it)
			for _, g := range groups {
				row := ReferenceRow{Model: s.Models[m].ID, ItemID: item.ID, Scale: item.Scale, Group: g, Options: opts,
					Answers: a.GroupPMF(m, it, g)}
				row.Human, row.Humans = h.groupDist(it, g)
				row.compare(s, it)
				a.Reference = append(a.Reference, row)
			}
		}
	}
	for m := range s.Models {
		for k, sc := range a.ScaleIDs {
			items := a.ScaleItems(k)
			for _, g := range groups {
				rs := ReferenceScale{Model: s.Models[m].ID, Scale: sc, ScaleName: a.ScaleNames[k], Group: g}
				var x [][]float64
				for p := range s.Personas {
					if !s.InGroup(p, g) {
						continue
					}
					row := make([]float64, len(items))
					for j, it := range items {
						row[j] = psychometrics.Missing
						if v := expectedScore(s, it, a.PersonaPMF(m, it, p).P); v != nil {
							row[j] = *v
						}
					}
					x = append(x, row)
				}
				ps := psychometrics.ScaleReliability(x)
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
				}
				a.ReferenceScales = append(a.ReferenceScales, rs)
			}
		}
	}
}

// compare fills the distances, entropies and means of a row whose distributions are set.
func (r *ReferenceRow) compare(s *experiment.Spec, it int) {
	if r.Answers.P != nil {
		r.ModelEntropy = stat(psychometrics.Entropy(r.Answers.P))
		r.ModelMean = expectedScore(s, it, r.Answers.P)
	}
	if r.Human != nil {
		r.HumanEntropy = stat(psychometrics.Entropy(r.Human))
		r.HumanMean = expectedScore(s, it, r.Human)
	}
	if r.Answers.P == nil || r.Human == nil {
		return
	}
	r.JSD = stat(psychometrics.JensenShannon(r.Answers.P, r.Human))
	if mp, hp := scoredPMF(s, it, r.Answers.P), scoredPMF(s, it, r.Human); mp != nil && hp != nil {
		r.W1 = stat(psychometrics.Wasserstein1(mp, hp))
	}
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
	it := c.Item
	if p == nil {
		return nil
	}
	var sum, mass float64
	for k, o := range s.OptionsFor(it).Options {
		v, ok := s.CellScore(c, o.ID)
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

// ExpectedScore is Σ p_k · score_k over item it's scored options divided by their mass (reverse-keyed items
// reversed); nil without p or without mass on a scored option. For a point mass it is the option's score.
func ExpectedScore(s *experiment.Spec, it int, p []float64) *float64 { return expectedScore(s, it, p) }
