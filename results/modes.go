package results

import (
	"io"
	"slices"
	"strconv"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
	"github.com/silicolab/silico/store"
)

// ModesFile compares the answer distributions a run's answer modes give for the same personas and items.
const ModesFile = "modes.csv"

// ModeOrder is the order of the answer modes in modes.csv: a pair is written (earlier, later).
var ModeOrder = []experiment.AnswerMode{experiment.AnswerText, experiment.AnswerLogprobs, experiment.AnswerVerbalized,
	experiment.AnswerSamples}

// ModeDist is one persona's answer distribution on one item under one answer mode: the input of CompareModes.
type ModeDist struct {
	// Model is the model's index in the spec, Item the item's, Persona the persona's.
	Model, Item, Persona int
	Mode                 experiment.AnswerMode
	// P is over the item's options, in their order (spec.OptionsFor(Item)), summing to 1; nil: the mode gave
	// this persona no distribution (every cell unparsed or without probabilities).
	P []float64
}

// ModesRow is one line of modes.csv: two answer modes of one model compared on one item.
type ModesRow struct {
	Model  string
	ItemID string
	Scale  string
	// ModeA precedes ModeB in ModeOrder.
	ModeA, ModeB experiment.AnswerMode
	// Personas is the number of personas both modes gave a distribution.
	Personas int
	// W1 and JSD are the means over those personas of the distance between the persona's two distributions:
	// W1 the 1-Wasserstein distance over the item's scored options (renormalised over them, unit spacing; a
	// persona with no mass on them in either distribution is left out of the mean), JSD the Jensen–Shannon
	// divergence in bits over every option. nil when no persona has one.
	W1, JSD *float64
	// TopCompared is the number of those personas for whom both distributions have a single most likely option
	// (a tie has none); TopAgree the share of them for whom it is the same option. nil when TopCompared is 0.
	TopCompared int
	TopAgree    *float64
}

// CompareModes compares, for every model and item, each pair of answer modes that dists has for it: persona by
// persona (a persona's two distributions come from the same prompt, so the comparison is within a respondent),
// then averaged over the personas both modes cover. Rows come in spec order of models and items, pairs in
// ModeOrder; a pair no persona has both of is left out. dists may come in any order; a (model, item, persona,
// mode) given twice keeps the last.
func CompareModes(s *experiment.Spec, dists []ModeDist) []ModesRow {
	type key struct{ m, it int }
	byCell := map[key]map[experiment.AnswerMode]map[int][]float64{}
	for _, d := range dists {
		k := key{d.Model, d.Item}
		if byCell[k] == nil {
			byCell[k] = map[experiment.AnswerMode]map[int][]float64{}
		}
		if byCell[k][d.Mode] == nil {
			byCell[k][d.Mode] = map[int][]float64{}
		}
		byCell[k][d.Mode][d.Persona] = d.P
	}
	var out []ModesRow
	for m := range s.Models {
		for it, item := range s.Questionnaire.Items {
			modes := byCell[key{m, it}]
			for i, a := range ModeOrder {
				for _, b := range ModeOrder[i+1:] {
					if modes[a] == nil || modes[b] == nil {
						continue
					}
					r := ModesRow{Model: s.Models[m].ID, ItemID: item.ID, Scale: item.Scale, ModeA: a, ModeB: b}
					r.compare(s, it, modes[a], modes[b])
					if r.Personas > 0 {
						out = append(out, r)
					}
				}
			}
		}
	}
	return out
}

// compare fills r from the personas' distributions under its two modes, in persona order (so that the sums, and
// the means to the last bit, do not depend on the map's order).
func (r *ModesRow) compare(s *experiment.Spec, it int, pa, pb map[int][]float64) {
	var w1, jsd float64
	var nw1, njsd, agree int
	for p := range s.Personas {
		a, b := pa[p], pb[p]
		if a == nil || b == nil {
			continue
		}
		r.Personas++
		if v := stat(psychometrics.JensenShannon(a, b)); v != nil {
			jsd += *v
			njsd++
		}
		if sa, sb := scoredPMF(s, it, a), scoredPMF(s, it, b); sa != nil && sb != nil {
			if v := stat(psychometrics.Wasserstein1(sa, sb)); v != nil {
				w1 += *v
				nw1++
			}
		}
		ta, tb := singleTop(a), singleTop(b)
		if ta >= 0 && tb >= 0 {
			r.TopCompared++
			if ta == tb {
				agree++
			}
		}
	}
	r.W1, r.JSD = mean(w1, nw1), mean(jsd, njsd)
	r.TopAgree = mean(float64(agree), r.TopCompared)
}

// mean is sum/n, nil for n 0.
func mean(sum float64, n int) *float64 {
	if n == 0 {
		return nil
	}
	return finite(sum / float64(n))
}

// singleTop is the index of p's most likely option, -1 when several share the highest probability.
func singleTop(p []float64) int {
	top := -1
	for k, v := range p {
		if top < 0 || v > p[top] {
			top = k
		}
	}
	for k, v := range p {
		if k != top && v == p[top] {
			return -1
		}
	}
	return top
}

// ModeSums gathers ModeDists from a run's rows: each persona's mean, over the cells added for it, of the
// per-cell distribution of each mode. A cell's distribution under mode text or samples is the point mass at its
// written answer (samples: so the mean over seeds is the share of the seeds that chose each option); under
// logprobs or verbalized its Probs. Only cells that have one count; a persona with none under a mode gets nil.
type ModeSums struct {
	spec *experiment.Spec
	sums map[modeKey]*modeSum
	keys []modeKey
}

type modeKey struct {
	m, it, p int
	mode     experiment.AnswerMode
}

type modeSum struct {
	p []float64
	n int
}

// NewModeSums returns an empty ModeSums for the rows of spec's cells.
func NewModeSums(s *experiment.Spec) *ModeSums {
	return &ModeSums{spec: s, sums: map[modeKey]*modeSum{}}
}

// Add counts the row of cell c under each of modes, the modes that the cell's call answers (for the main call of
// a model with modes [text, logprobs, verbalized]: text and logprobs; for its verbalized call: verbalized).
func (ms *ModeSums) Add(c experiment.Cell, r *Row, modes []experiment.AnswerMode) {
	k := len(ms.spec.OptionsFor(c.Item).Options)
	for _, mode := range modes {
		var p []float64
		switch mode {
		case experiment.AnswerText, experiment.AnswerSamples:
			if r.Status != store.StatusOK {
				continue
			}
			i := slices.Index(optionIDs(ms.spec, c.Item), r.OptionID)
			if i < 0 {
				continue
			}
			p = make([]float64, k)
			p[i] = 1
		case experiment.AnswerLogprobs, experiment.AnswerVerbalized:
			if len(r.Probs) != k || r.ProbsSource != string(mode) {
				continue
			}
			p = r.Probs
		default:
			continue
		}
		key := modeKey{c.Model, c.Item, c.Persona, mode}
		sum := ms.sums[key]
		if sum == nil {
			sum = &modeSum{p: make([]float64, k)}
			ms.sums[key] = sum
			ms.keys = append(ms.keys, key)
		}
		for i, v := range p {
			sum.p[i] += v
		}
		sum.n++
	}
}

// Dists returns the gathered distributions, in the order they were first added to.
func (ms *ModeSums) Dists() []ModeDist {
	out := make([]ModeDist, 0, len(ms.keys))
	for _, k := range ms.keys {
		sum := ms.sums[k]
		p := make([]float64, len(sum.p))
		for i, v := range sum.p {
			p[i] = v / float64(sum.n)
		}
		out = append(out, ModeDist{Model: k.m, Item: k.it, Persona: k.p, Mode: k.mode, P: p})
	}
	return out
}

// ModesHeader returns the header of modes.csv: one line per model × item × pair of answer modes.
func ModesHeader() []string {
	return []string{"run_id", "model", "item_id", "scale", "mode_a", "mode_b", "n_personas", "w1", "jsd",
		"n_top_compared", "top_agree"}
}

// WriteModes writes modes.csv: rows as CompareModes returns them, statistics as Stat formats them.
func WriteModes(w io.Writer, runID string, rows []ModesRow) error {
	return writeCSV(w, ModesHeader(), len(rows), func(i int) []string {
		r := rows[i]
		return []string{runID, r.Model, r.ItemID, r.Scale, string(r.ModeA), string(r.ModeB), strconv.Itoa(r.Personas),
			Stat(r.W1), Stat(r.JSD), strconv.Itoa(r.TopCompared), Stat(r.TopAgree)}
	})
}
